// The /model page, live (static/js/live.js): the sentence, layer, head and query selectors
// redraw the page's pictures as they change (the server runs the model; nothing is computed
// here). A click on one head in the grid opens that head: the grid is one heatmap of n × n
// blocks with a gap between them (meta.block = n + 1), so the clicked cell's row and column
// say which layer and head it shows.
"use strict";

(function () {
  if (!document.getElementById("model-form") || !window.AttentionLab || !window.AttentionLab.live) return;

  const model = window.AttentionLab.live({
    form: "model-form",
    delay: 150, // a sentence is typed word by word: each run of the model takes a while
    url: function (params) { return "/model?" + params.toString(); },
    // A 422 brings the sentences saying what to fix; the form stays as typed.
    regions: function (doc) {
      return doc.liveStatus === 200 ? ["model-form", "model-results"] : ["model-results"];
    },
  });

  function openHead(point) {
    const block = point && point.data && point.data.meta && point.data.meta.block;
    if (!block || !Array.isArray(point.pointNumber)) return;
    document.getElementById("layer").value = String(Math.floor(point.pointNumber[0] / block));
    document.getElementById("head").value = String(Math.floor(point.pointNumber[1] / block));
    model.update({ now: true });
  }

  document.addEventListener("figure:drawn", function (event) {
    const grid = event.target;
    if (grid.dataset.figure !== "fig-grid" || grid.dataset.clickable) return;
    grid.dataset.clickable = "1";
    grid.on("plotly_click", function (data) { openHead(data.points[0]); });
  });

  // A select marked data-autosubmit (the role filter) runs the
  // form as soon as it changes; its button stays for a browser without JavaScript.
  document.addEventListener("change", function (event) {
    const select = event.target;
    if (!(select instanceof HTMLSelectElement) || !select.hasAttribute("data-autosubmit")) return;
    if (select.form) select.form.requestSubmit();
  });
})();
