// An output channel only appends, so a progress bar that redraws with `\r` cannot be redrawn
// in place there. What it can show is one line per state the bar was in when a chunk came
// (at most one per poll of the log), never one per redraw: within a chunk, a line's last
// state is the one a terminal would be showing.

export class CarriageReturns {
  /** What was appended last ends mid-line (no newline yet). */
  private lineOpen = false;
  /** The last chunk ended with `\r`: what comes next overwrites that line. */
  private returnPending = false;

  /** The text to append for the next piece of the log. */
  push(text: string): string {
    if (text === "") return "";
    const lines = text.replace(/\r\n/g, "\n").split("\n");
    const out: string[] = [];
    lines.forEach((line, index) => {
      const { shown, at } = lastState(line);
      if (index === 0 && this.lineOpen) {
        // Continue the open line, or, when the bar redrew it, show the new state below it.
        const redrawn = at > 0 || (this.returnPending && shown !== "");
        out.push(redrawn ? "\n" + shown : at === 0 ? shown : "");
      } else {
        out.push(shown);
      }
    });
    this.returnPending = text.endsWith("\r");
    const result = out.join("\n");
    const last = lines[lines.length - 1];
    this.lineOpen = last !== "" ? true : lines.length > 1 ? false : this.lineOpen;
    return result;
  }
}

/** What a terminal shows of a line redrawn with `\r`: its last non-empty state, and which
 * state that is (0: the text before any `\r`; -1: none). */
function lastState(line: string): { shown: string; at: number } {
  const states = line.split("\r");
  for (let i = states.length - 1; i >= 0; i--) {
    if (states[i] !== "") return { shown: states[i], at: i };
  }
  return { shown: "", at: -1 };
}
