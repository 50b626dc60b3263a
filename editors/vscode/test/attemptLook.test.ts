import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RunInfo } from "../src/protocol/generated";
import { runLook } from "../src/tree/presentation";

describe("tree rows of runs with attempts and nodes", () => {
  const base: RunInfo = { host: "h1", runId: "r", state: "running" };
  it("say the attempt a retry started, and why, and every node's host", () => {
    const look = runLook({
      ...base,
      attempts: [
        { number: 1, state: "lost" },
        { number: 2, state: "running", cause: "retry 1 of 1: attempt 1 ended lost (node 1 (h2))" },
      ],
      nodes: [
        { host: "h1", remoteDir: "/a/r" },
        { host: "h2", remoteDir: "/b/r" },
      ],
    });
    assert.equal(look.description, "running · attempt 2");
    assert.match(look.tooltip, /^r on h1,h2: running · attempt 2/);
    assert.match(look.tooltip, /attempt 2: retry 1 of 1: attempt 1 ended lost/);
  });
  it("say nothing of attempts for a run's first", () => {
    assert.equal(runLook({ ...base, attempts: [{ number: 1, state: "running" }] }).description, "running");
  });
});
