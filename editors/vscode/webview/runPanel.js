// The run panel's page: draws what the extension posts (PanelData.view()) with uPlot. It
// holds no data of its own; a checkbox asks the extension to show or hide a series.
/* global uPlot, acquireVsCodeApi */
(function () {
  const vscode = acquireVsCodeApi();
  const COLORS = ["#3794ff", "#f14c4c", "#23d18b", "#cca700", "#b180d7", "#29b8db", "#e07b39", "#888888"];
  const charts = {};
  const text = (id, value) => {
    document.getElementById(id).textContent = value;
  };
  const width = () => Math.max(300, document.body.clientWidth - 32);

  // One uPlot per element id, rebuilt only when its series change; otherwise setData.
  function draw(id, x, series, opts) {
    const element = document.getElementById(id);
    const shown = series.filter((s) => s.shown !== false);
    if (x.length === 0 || shown.length === 0) {
      if (charts[id]) {
        charts[id].plot.destroy();
        delete charts[id];
      }
      element.innerHTML = '<div class="empty">' + (opts.empty || "no data yet") + "</div>";
      return;
    }
    const signature = shown.map((s) => s.name).join("\u0000");
    const data = [x].concat(shown.map((s) => s.values));
    const chart = charts[id];
    if (chart && chart.signature === signature) {
      chart.plot.setData(data);
      return;
    }
    if (chart) chart.plot.destroy();
    element.innerHTML = "";
    const plot = new uPlot(
      {
        width: width(),
        height: opts.height || 240,
        scales: { x: { time: opts.time === true }, y: opts.y || {} },
        axes: [
          { stroke: "#999", grid: { stroke: "rgba(128,128,128,0.15)" } },
          { stroke: "#999", grid: { stroke: "rgba(128,128,128,0.15)" } },
        ],
        series: [{ label: opts.xLabel || "step" }].concat(
          shown.map((s) => ({
            label: s.name,
            stroke: COLORS[series.indexOf(s) % COLORS.length],
            width: 2,
            spanGaps: true,
            points: { show: x.length < 60 },
          })),
        ),
      },
      data,
      element,
    );
    charts[id] = { plot: plot, signature: signature };
  }

  function seriesBoxes(chart) {
    const box = document.getElementById("series");
    const names = chart.series.map((s) => s.name).join("\u0000");
    if (box.dataset.names === names) {
      chart.series.forEach((s, i) => {
        box.querySelectorAll("input")[i].checked = s.shown;
      });
      return;
    }
    box.dataset.names = names;
    box.innerHTML = "";
    chart.series.forEach((s) => {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "checkbox";
      input.checked = s.shown;
      input.dataset.series = s.name;
      input.addEventListener("change", () => vscode.postMessage({ type: "toggle", name: s.name, shown: input.checked }));
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + s.name));
      box.appendChild(label);
    });
  }

  function latestTable(latest) {
    const table = document.getElementById("latest");
    table.innerHTML = "";
    latest.forEach((entry) => {
      const row = table.insertRow();
      row.insertCell().textContent = entry.name;
      row.insertCell().textContent = entry.value;
    });
  }

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (message.type !== "view") return;
    const view = message.view;
    text("title", view.title);
    text("state", view.state);
    text("progress", view.progress);
    text("error", message.error || "");
    seriesBoxes(view.chart);
    latestTable(view.latest);
    draw("chart", view.chart.x, view.chart.series, { empty: "no metrics in the log yet" });
    draw("gpu-util", view.gpus.x, view.gpus.utilization, {
      time: true, xLabel: "time", height: 160, y: { range: [0, 100] }, empty: "no GPU telemetry from this host",
    });
    draw("gpu-mem", view.gpus.x, view.gpus.memory, {
      time: true, xLabel: "time", height: 160, y: { range: [0, 100] }, empty: "no GPU telemetry from this host",
    });
    document.body.dataset.points = String(view.chart.x.length);
    // An overlay's runs may be on several hosts: no GPU charts.
    document.getElementById("gpus").hidden = view.overlay === true;
  });
  window.addEventListener("resize", () => {
    Object.values(charts).forEach((chart) => chart.plot.setSize({ width: width(), height: chart.plot.height }));
  });
  vscode.postMessage({ type: "ready" });
})();
