import * as vscode from "vscode";

/** The run panel's page: one for a run and for several runs' overlay, told apart by the data the panel then sends. */
export function panelHtml(webview: vscode.Webview, assets: vscode.Uri): string {
  const nonce = [...Array(32)].map(() => Math.floor(Math.random() * 16).toString(16)).join("");
  const asset = (name: string): string => webview.asWebviewUri(vscode.Uri.joinPath(assets, name)).toString();
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${webview.cspSource} data:; style-src ${webview.cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset("uPlot.min.css")}">
<link rel="stylesheet" href="${asset("runPanel.css")}">
<title>rtrain run</title>
</head>
<body>
<header>
  <h1 id="title"></h1>
  <div id="state"></div>
  <div id="progress"></div>
</header>
<div id="error"></div>
<section>
  <h2>Metrics</h2>
  <div id="series"></div>
  <div id="chart" class="chart"></div>
  <table id="latest"></table>
</section>
<section id="gpus">
  <h2>GPU utilization (%)</h2>
  <div id="gpu-util" class="chart"></div>
  <h2>GPU memory (% used)</h2>
  <div id="gpu-mem" class="chart"></div>
</section>
<script nonce="${nonce}" src="${asset("uPlot.iife.min.js")}"></script>
<script nonce="${nonce}" src="${asset("runPanel.js")}"></script>
</body>
</html>`;
}
