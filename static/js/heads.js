// /heads, live (static/js/live.js): the server renders the form and the results for the
// form's state; its form carries the key/value-head choices that divide h, so no rule of
// the page is repeated here. This file only says which part to take and opens a head.
"use strict";

(function () {
  if (!document.getElementById("heads-form") || !window.AttentionLab || !window.AttentionLab.live) return;

  const heads = window.AttentionLab.live({
    form: "heads-form",
    url: function (params) { return "/heads?" + params.toString() + "&fragment=1"; },
    // A 422 (an input that cannot be used) brings the sentences saying so; the form stays as
    // typed, since the server's copy of it would hold the defaults.
    regions: function (doc) { return doc.liveStatus === 422 ? ["heads-results"] : ["live"]; },
  });

  function open(head) {
    document.getElementById("head").value = String(head);
    heads.update({ now: true });
  }

  // A click on a head in the figure of every head opens it: the figure is one heatmap of
  // panels, and its meta names the head of each (panels[row // rows][column // cols]).
  document.addEventListener("figure:drawn", function (event) {
    const plot = event.target;
    if (plot.dataset.figure !== "fig-heads" || plot.dataset.clickable) return;
    plot.dataset.clickable = "1";
    plot.on("plotly_click", function (data) {
      const point = data.points && data.points[0];
      const meta = plot.data[0].meta;
      if (!point || !meta || !Array.isArray(point.pointNumber)) return;
      const row = meta.panels[Math.floor(point.pointNumber[0] / meta.rows)] || [];
      const head = row[Math.floor(point.pointNumber[1] / meta.cols)];
      if (head !== undefined) open(head);
    });
  });

  // A head's link (which works without JavaScript too) selects that head.
  document.addEventListener("click", function (event) {
    const link = event.target.closest("#heads-results a[data-head]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    open(link.dataset.head);
  });
})();
