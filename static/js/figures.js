// Charts drawn by plotly.js (app/figures/charts.py, placed by the `chart` macro): lines and bars;
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
      const figure = JSON.parse(newest).figure;
      return Plotly.react(plot, figure.data, themed(figure.layout), CONFIG);
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

  // Presenter mode: tick labels as big as the rest of the text.
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

  window.AttentionLab = Object.assign(window.AttentionLab || {}, { drawFigures: drawFigures });
  document.addEventListener("DOMContentLoaded", function () { drawFigures(document); });
})();
