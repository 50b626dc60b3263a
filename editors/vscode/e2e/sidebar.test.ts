// End to end, in a real VS Code (code-server driven by Chromium): the extension starts the
// daemon itself, runs started from outside appear in the sidebar and change state without a
// click on Refresh, a run's panel draws its loss curve as the run goes on, two runs selected
// together open one panel with their curves overlaid, and Stop from the sidebar ends a run
// after a confirmation.
//
// Output (screenshots, code-server and daemon logs) goes to RTRAIN_E2E_OUTPUT, default
// .e2e-output/. RTRAIN_E2E_UPDATE_SCREENSHOT=1 also copies the sidebar to media/sidebar.png
// and the run panel to media/run-panel.png.

import * as assert from "node:assert/strict";
import { copyFileSync, cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, afterEach, before, describe, it, type TestContext } from "node:test";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { demoConfig, exampleDataset } from "../test/support/demoRun";
import { isolatedDaemon, onPath, RTRAIN, rtrainAvailable, RTRAIN_MISSING, type IsolatedDaemon } from "../test/support/isolatedDaemon";
import { CodeServer, EXTENSION_ROOT, findTools } from "./support/codeServer";

const OUTPUT = process.env.RTRAIN_E2E_OUTPUT || join(EXTENSION_ROOT, ".e2e-output");
const UI_TIMEOUT = 60_000;

describe("the rtrain sidebar in code-server", () => {
  let daemon: IsolatedDaemon;
  let server: CodeServer | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let skip: string | undefined;

  const sidebar = (): Locator => page.locator('[id="workbench.parts.sidebar"]');
  const row = (text: string | RegExp): Locator => sidebar().locator(".monaco-list-row", { hasText: text });
  // From outside, as a user at a terminal would: `rtrain start local ...`.
  const startRun = (runId: string, steps: number, sleep: number, ...command: string[]): Promise<string> =>
    daemon.rtrain(
      "start", "local",
      "-c", demoConfig(join(daemon.dir, "ws"), runId, steps, sleep),
      "-d", exampleDataset(),
      "--run-id", runId,
      "--gpus", "0",
      "--workdir", daemon.workdir,
      "--no-follow",
      ...(command.length > 0 ? ["--", ...command] : []),
    );

  before(async () => {
    const { tools, missing } = findTools();
    if (!(await rtrainAvailable())) missing.push(RTRAIN_MISSING);
    if (missing.length > 0) {
      skip = `missing: ${missing.join("; ")}`;
      if (process.env.CI === "true") throw new Error(skip);
      return;
    }
    rmSync(OUTPUT, { recursive: true, force: true });
    mkdirSync(OUTPUT, { recursive: true });
    daemon = isolatedDaemon();
    const workspace = join(daemon.dir, "ws");
    mkdirSync(workspace, { recursive: true });
    // code-server writes under HOME and the XDG folders: keep it all in the temp dir.
    const env = { ...daemon.env, HOME: join(daemon.dir, "home") };
    // The extension host gets its PATH from a login shell, which may not know where
    // `rtrain` is (a virtualenv, pyenv): name it, as a user would in the settings.
    const settings = {
      "rtrain.executable": onPath(RTRAIN),
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "chat.disableAIFeatures": true,
      "workbench.secondarySideBar.defaultVisibility": "hidden",
    };
    server = await CodeServer.start(tools, daemon.dir, workspace, env, settings);
    browser = await chromium.launch({
      executablePath: tools.chromium,
      args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(UI_TIMEOUT);
    await page.goto(server.url);
    await page.locator(".monaco-workbench").waitFor();
  });

  // A failed step leaves a picture of the workbench behind.
  afterEach(async (t) => {
    const failed = (t as TestContext & { passed?: boolean }).passed === false;
    if (failed && page && !page.isClosed()) {
      await page.screenshot({ path: join(OUTPUT, `failed-${t.name.replace(/\W+/g, "-")}.png`) }).catch(() => undefined);
      // A quick input or dialog left open would cover the next step's clicks: close it, so
      // one failure reads as one.
      for (let i = 0; i < 3; i++) await page.keyboard.press("Escape").catch(() => undefined);
    }
  });

  after(async () => {
    if (page && !page.isClosed()) await page.screenshot({ path: join(OUTPUT, "workbench-final.png") }).catch(() => undefined);
    await browser?.close();
    server?.stop();
    if (daemon) {
      for (const log of ["code-server.log", join("state", "rtrain", "daemon.log")]) {
        const path = join(daemon.dir, log);
        if (existsSync(path)) copyFileSync(path, join(OUTPUT, log.replace(/\W+/g, "-")));
      }
      // VS Code's own logs, the extension's "rtrain" output channel among them.
      const logs = join(daemon.dir, "code-user", "logs");
      if (existsSync(logs)) cpSync(logs, join(OUTPUT, "vscode-logs"), { recursive: true });
      await daemon.cleanup();
    }
  });

  it("shows the local host, started by the extension itself", async (t) => {
    if (skip) return t.skip(skip);
    await page.locator('.activitybar a.action-label[aria-label="rtrain"]').click();
    const host = sidebar().locator('.monaco-list-row[aria-level="1"]', { hasText: "local" });
    await host.waitFor();
    await assertText(host, /connected · local/);
    await widenSidebar(page, 160); // room for the run descriptions in the screenshot

    // Preflight from the host's inline button: the daemon's verdict, whichever it is here.
    await host.hover();
    await host.locator('.action-label[aria-label="Preflight Host"]').click();
    await page.locator(".notification-toast", { hasText: /rtrain: local (can train|is not ready)/ }).waitFor();
  });

  it("shows a run started from outside as running, then completed, without Refresh", async (t) => {
    if (skip) return t.skip(skip);
    await startRun("e2e-completes", 60, 0.1);
    await row(/e2e-completes.*running/s).waitFor();
    await page.locator(".statusbar-item", { hasText: "1 running" }).waitFor();
    await row(/e2e-completes.*completed/s).waitFor({ timeout: 90_000 });
  });

  it("fetches the completed run's adapter into a folder picked in VS Code's dialog", async (t) => {
    if (skip) return t.skip(skip);
    const dest = join(daemon.dir, "ws", "fetched");
    mkdirSync(dest, { recursive: true });
    await row(/e2e-completes/).click({ button: "right" });
    // The menu acts on the item under the pointer when Enter is pressed.
    await page.locator(".context-view .action-label", { hasText: /^Fetch Files/ }).hover();
    await page.keyboard.press("Enter");
    const input = page.locator(".quick-input-widget input.input");
    await assertValue(input, "lora_model");
    await input.press("Enter");
    // VS Code's own folder dialog (a quick input in the browser). It reuses the same widget
    // and fills in its default folder once it has read it, which on a slow machine lands
    // after a quick fill and overwrites it: wait for the dialog to be there with its own
    // value, then type the folder until it holds, and accept.
    const fetchHere = page.locator(".quick-input-widget .monaco-button", { hasText: "Fetch Here" });
    await fetchHere.waitFor();
    await waitUntil(async () => (await input.inputValue()).startsWith("/"), "the folder dialog shows its default folder");
    await waitUntil(async () => {
      if ((await input.inputValue()) !== `${dest}/`) await input.fill(`${dest}/`);
      await page.waitForTimeout(200);
      return (await input.inputValue()) === `${dest}/`;
    }, `the folder dialog keeps ${dest}/`);
    await fetchHere.click();
    const toast = page.locator(".notification-toast", { hasText: /rtrain: fetched \d+ files/ });
    await assertText(toast, /into .*fetched; all verified by sha256/);
    assert.ok(existsSync(join(dest, "lora_model", "adapter_config.json")), "the adapter is on disk");
  });

  it("shows a failed run with its exit code", async (t) => {
    if (skip) return t.skip(skip);
    await startRun("e2e-fails", 1, 0, "{python}", "-c", "raise SystemExit(3)");
    await row(/e2e-fails.*failed \(exit 3\)/s).waitFor();
  });

  it("opens a run's panel and sees its loss curve grow while the run goes on", async (t) => {
    if (skip) return t.skip(skip);
    // Long enough to still run on a loaded machine when the chart is checked; stopped below.
    await startRun("e2e-panel", 100_000, 0.1);
    // The tree row carries the latest loss the daemon read from the log.
    const running = row(/e2e-panel.*running · loss \d/s);
    await running.waitFor();
    await running.hover();
    // A webview is an iframe holding the page's own iframe.
    const panel = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
    const chart = panel.locator("#chart canvas");
    await clickUntil(running.locator('.action-label[aria-label="Show Run Panel"]'), chart);
    const points = async (): Promise<number> => Number(await panel.locator("body").getAttribute("data-points"));
    const first = await points();
    assert.ok(first > 0, "the chart has points");
    const deadline = Date.now() + UI_TIMEOUT;
    while ((await points()) <= first + 5) {
      assert.ok(Date.now() < deadline, `the chart stayed at ${first} points`);
      await page.waitForTimeout(250);
    }
    await panel.locator("#series input[data-series=loss]:checked").waitFor();
    await panel.locator("#latest td", { hasText: "loss" }).first().waitFor();
    await page.mouse.move(1200, 780);
    await page.screenshot({ path: join(OUTPUT, "run-panel.png") });
    if (process.env.RTRAIN_E2E_UPDATE_SCREENSHOT === "1") {
      copyFileSync(join(OUTPUT, "run-panel.png"), join(EXTENSION_ROOT, "media", "run-panel.png"));
    }
    await daemon.rtrain("stop", "local", "e2e-panel", "--workdir", daemon.workdir);
    await row(/e2e-panel.*stopped/s).waitFor();
  });

  it("overlays the loss curves of two runs selected together in one panel", async (t) => {
    if (skip) return t.skip(skip);
    await startRun("e2e-over-a", 30, 0);
    await startRun("e2e-over-b", 30, 0);
    const a = row(/e2e-over-a.*completed/s);
    const b = row(/e2e-over-b.*completed/s);
    await a.waitFor();
    await b.waitFor();
    await a.click();
    await b.click({ modifiers: ["ControlOrMeta"] });
    await b.hover();
    // The newest webview: the run panel of the test before is still open behind it.
    const panel = page.frameLocator("iframe.webview.ready").last().frameLocator("#active-frame");
    await clickUntil(b.locator('.action-label[aria-label="Show Run Panel"]'), panel.locator("#title", { hasText: "2 runs: loss" }));
    const lines = panel.locator("#series input");
    await lines.nth(1).waitFor();
    const names = await lines.evaluateAll((inputs) => inputs.map((input) => input.getAttribute("data-series")));
    assert.deepEqual(names.sort(), ["e2e-over-a", "e2e-over-b"]);
    await panel.locator("#chart canvas").waitFor();
    assert.ok(Number(await panel.locator("body").getAttribute("data-points")) > 0, "the overlay has points");
    await page.mouse.move(1200, 780);
    await page.screenshot({ path: join(OUTPUT, "run-overlay.png") });
  });

  it("stops a second run from the sidebar after a confirmation, and shows it stopped", async (t) => {
    if (skip) return t.skip(skip);
    await startRun("e2e-stopped", 100_000, 0.1);
    const running = row(/e2e-stopped.*running/s);
    await running.waitFor();
    await page.mouse.move(700, 500); // no tooltip over the view
    await page.screenshot({ path: join(OUTPUT, "sidebar.png"), clip: await sidebarTop(page) });
    if (process.env.RTRAIN_E2E_UPDATE_SCREENSHOT === "1") {
      copyFileSync(join(OUTPUT, "sidebar.png"), join(EXTENSION_ROOT, "media", "sidebar.png"));
    }

    // Clicking a run tails it into its own output channel.
    const output = page.locator(".part.panel"); // Monaco draws spaces as U+00A0: match \s
    await clickUntil(running.locator(".label-name", { hasText: "e2e-stopped" }), output.locator(".view-lines", { hasText: /step\s\d+\s\|/ }));

    const dialog = page.locator(".monaco-dialog-box");
    await running.hover();
    await clickUntil(running.locator('.action-label[aria-label="Stop Run"]'), dialog);
    await assertText(dialog, /Stop run e2e-stopped on local\?/);
    await dialog.locator(".monaco-button", { hasText: /^Stop$/ }).click();

    await row(/e2e-stopped.*stopped/s).waitFor();
    await page.locator(".notification-toast", { hasText: "stopped e2e-stopped on local" }).waitFor();
    await page.locator(".statusbar-item", { hasText: "0 running" }).waitFor();
    await output.locator(".view-lines", { hasText: /e2e-stopped\sis\sstopped;\sthe\slog\sends\shere/ }).waitFor();
    await page.screenshot({ path: join(OUTPUT, "sidebar-stopped.png"), clip: await sidebarTop(page) });
    assert.match(await daemon.rtrain("status", "local", "e2e-stopped", "--workdir", daemon.workdir), /stopped/);
  });
});

/** Click, and click again should nothing happen: a running run's row is redrawn when its
 * loss moves (every 10 s at most), and a click landing on the redraw is lost, as it would be
 * for a person, who would click again. */
async function clickUntil(target: Locator, effect: Locator): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await target.click();
    try {
      await effect.waitFor({ timeout: attempt < 3 ? 10_000 : UI_TIMEOUT });
      return;
    } catch (error) {
      if (attempt >= 3) throw error;
      // A click on a row being redrawn reaches the command without its run, which then asks
      // for one in a quick pick: close it, as a person would, and click again.
      await target.page().keyboard.press("Escape");
    }
  }
}

/** Poll a condition a person would watch for, up to the UI timeout. */
async function waitUntil(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + UI_TIMEOUT;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function widenSidebar(page: Page, pixels: number): Promise<void> {
  // Drag the sash on the sidebar's right edge.
  const box = await page.locator('[id="workbench.parts.sidebar"]').boundingBox();
  if (!box) return;
  const x = box.x + box.width + 2;
  const y = box.y + box.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + pixels / 2, y, { steps: 5 });
  await page.mouse.move(x + pixels, y, { steps: 5 });
  await page.mouse.up();
}

/** The activity bar and the top of the sidebar, where the tree is: the README's picture. */
async function sidebarTop(page: Page): Promise<{ x: number; y: number; width: number; height: number }> {
  const box = await page.locator('[id="workbench.parts.sidebar"]').boundingBox();
  assert.ok(box, "the sidebar is visible");
  return { x: 0, y: 0, width: Math.ceil(box.x + box.width), height: 200 };
}

/** The widget shows before its value is set: wait for the value, then say what it held. */
async function assertValue(input: Locator, expected: string): Promise<void> {
  await input.waitFor();
  const deadline = Date.now() + UI_TIMEOUT;
  while ((await input.inputValue()) !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(await input.inputValue(), expected);
}

async function assertText(locator: Locator, pattern: RegExp): Promise<void> {
  await locator.first().waitFor();
  assert.match(await locator.first().innerText(), pattern);
}
