// Draws every figure on the page from its JSON data block. No attention arithmetic here:
// the server computed the figure; this file only hands it to plotly.js.
"use strict";

(function () {
  const CONFIG = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png" } };

  // Presenter mode (body.present): white on black, big labels, tall plots, thick cell borders.
  function presenting() {
    return document.body.classList.contains("present");
  }

  function themed(layout) {
    const present = presenting();
    const dark = present || window.matchMedia("(prefers-color-scheme: dark)").matches;
    const ink = present ? "#ffffff" : dark ? "#e8e8e8" : "#1d1d1f";
    const font = Object.assign({ color: ink }, layout.font || {}, present ? { size: 20 } : {});
    return Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: dark ? "#3a3a3a" : "#d9d9d9",
      font: font,
    }, present ? {
      height: Math.max(layout.height || 0, 460) + 50,
      margin: Object.assign({}, layout.margin, { t: ((layout.margin || {}).t || 70) + 50 }),
    } : {});
  }

  function traces(data) {
    if (!presenting()) return data;
    return data.map(function (trace) {
      return trace.type !== "heatmap" ? trace : Object.assign({}, trace, {
        xgap: 4, ygap: 4, textfont: { size: 22 }, colorbar: { thickness: 24, len: 0.9 },
      });
    });
  }

  function draw(root) {
    if (!window.Plotly) return;
    (root || document).querySelectorAll("[data-figure]").forEach(function (el) {
      const block = document.getElementById(el.dataset.figure);
      if (!block) return;
      const fig = JSON.parse(block.textContent);
      window.Plotly.react(el, traces(fig.data), themed(fig.layout), CONFIG);
    });
  }

  window.AttentionLab = Object.assign(window.AttentionLab || {}, { drawFigures: draw });
  document.addEventListener("DOMContentLoaded", function () { draw(document); });
})();
