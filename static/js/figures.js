// Charts drawn by plotly.js (app/figures/charts.py, placed by the `chart` macro): lines only;
// every heatmap is drawn by the server. No arithmetic here: the server built each figure; this
// file hands it to plotly.js.
//
// plotly.js (4.8 MB) is loaded the first time a chart comes near the screen, from the address
// the page gives (<body data-plotly>): a page without a chart on its first screen shows its
// heatmaps and text without waiting for it, and a page without charts never loads it. A chart
// is drawn when it comes near the screen, and drawn again at once when a live update brings
// new data for it. Its title, legend and download buttons are the page's own HTML: plotly's
// toolbar is off (it offered to upload to Plotly Cloud, had English tooltips and nine Tab
// stops, and covered titles on phones), and its axes cannot be zoomed by accident.
//
// AttentionLab.drawFigures(roots) draws what a live update swapped in (static/js/live.js).
"use strict";

(function () {
  const NEAR = "300px 0px"; // a chart this close to the viewport counts as near
  const CONFIG = { displayModeBar: false, responsive: true, showTips: false, doubleClick: false };
  const drawn = new WeakMap(); // plot element → the JSON text it was drawn from
  let plotly = null; // plotly.js, once asked for: a promise of window.Plotly

  document.documentElement.classList.add("charts-js"); // offers the downloads (app.css)

  function loadPlotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!plotly) {
      plotly = new Promise(function (resolve, reject) {
        const script = document.createElement("script");
        script.src = document.body.dataset.plotly;
        script.onload = function () { resolve(window.Plotly); };
        script.onerror = function () {
          plotly = null; // the next chart that comes near asks again
          reject(new Error("plotly.js did not load"));
        };
        document.head.appendChild(script);
      });
    }
    return plotly;
  }

  function dataOf(plot) {
    const block = document.getElementById(plot.dataset.figure);
    return block ? block.textContent : null;
  }

  // The page's look: its text colour, a panel behind the plot, and in presenter mode
  // (body.present) type big enough for the back of the room.
  function themed(layout) {
    const present = document.body.classList.contains("present");
    const dark = present || window.matchMedia("(prefers-color-scheme: dark)").matches;
    const ink = present ? "#ffffff" : dark ? "#e8e8e8" : "#1d1d1f";
    return Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: dark ? "#3a3a3a" : "#d9d9d9",
      font: Object.assign({ color: ink }, layout.font, present ? { size: 18 } : {}),
    }, present ? bigTicks(layout) : {});
  }

  function draw(plot) {
    const text = dataOf(plot);
    if (text === null || drawn.get(plot) === text) return Promise.resolve();
    return loadPlotly().then(function (Plotly) {
      const newest = dataOf(plot); // a live update may have brought newer data meanwhile
      if (!plot.isConnected || newest === null || drawn.get(plot) === newest) return null;
      drawn.set(plot, newest);
      const block = JSON.parse(newest);
      const figure = block.figure || block; // a plotly heatmap's block is the figure itself
      return Plotly.react(plot, heatmapTraces(figure, plot), themed(heatmapLayout(figure, plot)), CONFIG)
        .then(function () { plot.dispatchEvent(new CustomEvent("figure:drawn", { bubbles: true })); });
    });
  }

  const observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!entry.isIntersecting) return;
      observer.unobserve(entry.target);
      draw(entry.target);
    });
  }, { rootMargin: NEAR });

  // The charts in `roots` (an element or a list of them; the page by default): a chart
  // already drawn is drawn again with its new data at once; any other waits to come near.
  function drawFigures(roots) {
    [].concat(roots || document).forEach(function (root) {
      root.querySelectorAll("[data-figure]").forEach(function (plot) {
        if (drawn.has(plot)) draw(plot);
        else observer.observe(plot);
      });
    });
  }

  // ---------------------------------------------------------------- downloads

  // The figure as a file named after its title, drawn anew on white at a fixed size with its
  // title above and its legend below (the page's are HTML, outside plotly's picture).
  function download(button) {
    const figure = button.closest("figure.chart");
    const plot = figure.querySelector("[data-figure]");
    const block = JSON.parse(dataOf(plot));
    const layout = Object.assign({}, block.figure.layout, block.download.layout);
    loadPlotly().then(function (Plotly) {
      return Plotly.downloadImage({ data: block.figure.data, layout: layout, config: CONFIG }, {
        format: button.dataset.chartDownload,
        filename: block.download.file,
        width: layout.width,
        height: layout.height,
      });
    });
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-chart-download]");
    if (button) download(button);
  });

  // ---------------------------------------------------------------- plotly heatmaps
  // /heads and /model draw a few heatmaps with plotly until theirs are drawn by the server
  // (app/web/figures.py): their cell numbers, token labels and presenter sizes are fitted
  // here. This section goes with them.

  const CELL_TEXT_MIN_PX = 10; // a cell number smaller than this is left to the hover text

  function isHeatmap(figure) {
    return figure.data.some(function (trace) { return trace.type === "heatmap"; });
  }

  function bigTicks(layout) {
    const out = {};
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        out[key] = Object.assign({}, layout[key], {
          tickfont: Object.assign({}, layout[key].tickfont, { size: 18 }),
        });
      }
    });
    return out;
  }

  function fits(trace, plotWidth, layout, size) {
    const columns = Array.isArray(trace.x) ? trace.x.length : (trace.z[0] || []).length;
    const margin = layout.margin || {};
    const width = plotWidth - (margin.l || 70) - (margin.r || 10) - 40;
    const longest = (trace.text || []).reduce(function (m, row) {
      return Math.max(m, row.reduce(function (k, t) { return Math.max(k, String(t).length); }, 0));
    }, 0);
    return size >= CELL_TEXT_MIN_PX && width / Math.max(columns, 1) >= longest * size * 0.6 + 2;
  }

  function heatmapTraces(figure, plot) {
    if (!isHeatmap(figure)) return figure.data;
    const present = document.body.classList.contains("present");
    const width = plot.clientWidth || 300;
    return figure.data.map(function (trace) {
      if (trace.type !== "heatmap") return trace;
      const gap = trace.xgap ? 4 : 0;
      const out = present ? Object.assign({}, trace, {
        xgap: gap, ygap: gap, textfont: Object.assign({}, trace.textfont, { size: 22 }),
        colorbar: Object.assign({}, trace.colorbar, { thickness: 24, len: 0.9 }),
      }) : trace;
      if (out.texttemplate && !fits(out, width, figure.layout, (out.textfont || {}).size || 12)) {
        return Object.assign({}, out, { texttemplate: "" });
      }
      return out;
    });
  }

  // Token labels given one per cell stay legible: where the cells are smaller than the font,
  // each run of neighbouring labels keeps every k-th from its first.
  function heatmapLayout(figure, plot) {
    const layout = figure.layout;
    if (!isHeatmap(figure)) return layout;
    const trace = figure.data[0];
    const width = plot.clientWidth || 300;
    const margin = layout.margin || {};
    const across = (width - (margin.l || 0) - (margin.r || 0) - 80) / trace.z[0].length;
    const down = ((layout.height || 300) - (margin.t || 0) - (margin.b || 0)) / trace.z.length;
    const cell = Math.max(1, Math.min(across, down));
    const out = Object.assign({}, layout);
    if (document.body.classList.contains("present")) {
      out.height = Math.max(layout.height || 0, 420) + 30;
    }
    [["xaxis", trace.x], ["yaxis", trace.y]].forEach(function (pair) {
      const axis = layout[pair[0]];
      if (!axis || !Array.isArray(axis.tickvals) || !Array.isArray(pair[1])) return;
      const step = Math.ceil(((axis.tickfont || {}).size || 12) * 1.2 / cell);
      if (step <= 1) return;
      const position = new Map(pair[1].map(function (c, i) { return [c, i]; }));
      const kept = [];
      let start = -2;
      let last = -2;
      axis.tickvals.forEach(function (v, k) {
        const i = position.get(v);
        if (i !== last + 1) start = i;
        last = i;
        if ((i - start) % step === 0) kept.push({ at: i, k: k });
      });
      const shown = kept.filter(function (t, n) { return n === kept.length - 1 || kept[n + 1].at - t.at >= step; });
      out[pair[0]] = Object.assign({}, axis, {
        tickvals: shown.map(function (t) { return axis.tickvals[t.k]; }),
        ticktext: shown.map(function (t) { return axis.ticktext[t.k]; }),
      });
    });
    return out;
  }

  window.AttentionLab = Object.assign(window.AttentionLab || {}, { drawFigures: drawFigures });
  document.addEventListener("DOMContentLoaded", function () { drawFigures(document); });
})();
