// What a run panel and an overlay panel share: one webview page (panelHtml) that asks for
// its view once it is ready and says when a series is toggled, the listeners to undo when
// the panel closes, and the requests to abort then. Each subclass follows its runs and
// draws its own view.

import * as vscode from "vscode";
import { panelHtml } from "./panelHtml";

type PageMessage = { type: string; name?: string; shown?: boolean };

export abstract class FollowingPanel {
  protected readonly panel: vscode.WebviewPanel;
  protected readonly abort = new AbortController();
  // Undoes the subclass's listeners (notifications, connection state) on dispose.
  protected readonly stop: Array<() => void> = [];
  protected error: string | undefined;
  private ready = false;

  constructor(
    extensionUri: vscode.Uri,
    title: string,
    private readonly onDispose: () => void,
  ) {
    const assets = vscode.Uri.joinPath(extensionUri, "out", "webview");
    this.panel = vscode.window.createWebviewPanel("rtrain.runPanel", title, vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [assets],
    });
    this.panel.webview.html = panelHtml(this.panel.webview, assets);
    const messages = this.panel.webview.onDidReceiveMessage((message: PageMessage) => {
      if (message.type === "ready") {
        this.ready = true;
        this.post();
      } else if (message.type === "toggle" && typeof message.name === "string") {
        this.toggle(message.name, message.shown === true);
        this.post();
      }
    });
    this.panel.onDidDispose(() => {
      messages.dispose();
      this.dispose();
    });
  }

  reveal(): void {
    this.panel.reveal();
  }

  dispose(): void {
    this.abort.abort();
    for (const undo of this.stop.splice(0)) undo();
    this.onDispose();
    try {
      this.panel.dispose();
    } catch {
      // already disposed
    }
  }

  /** The page's view now: sent once the page is ready, and after every change. */
  protected post(): void {
    if (!this.ready) return;
    void this.panel.webview.postMessage({ type: "view", view: this.view(), error: this.error });
  }

  protected abstract view(): unknown;

  /** A series shown or hidden by its checkbox. */
  protected abstract toggle(name: string, shown: boolean): void;
}
