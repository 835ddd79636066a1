// Draws every figure on the page from its JSON data block. No attention arithmetic here:
// the server computed the figure; this file only hands it to plotly.js.
"use strict";

(function () {
  const CONFIG = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png" } };

  function themed(layout) {
    const dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
    const ink = dark ? "#e8e8e8" : "#1d1d1f";
    return Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: dark ? "#3a3a3a" : "#d9d9d9",
      font: Object.assign({ color: ink }, layout.font || {}),
    });
  }

  function draw(root) {
    if (!window.Plotly) return;
    (root || document).querySelectorAll("[data-figure]").forEach(function (el) {
      const block = document.getElementById(el.dataset.figure);
      if (!block) return;
      const fig = JSON.parse(block.textContent);
      window.Plotly.react(el, fig.data, themed(fig.layout), CONFIG);
    });
  }

  window.AttentionLab = Object.assign(window.AttentionLab || {}, { drawFigures: draw });
  document.addEventListener("DOMContentLoaded", function () { draw(document); });
})();
