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

  // A head's panel in the figure of every head links to the state with that head chosen (its
  // title's href, which works without JavaScript too): here the form takes that head and
  // asks for it, so that an edit still waiting for its answer is kept.
  function open(panel) {
    const link = panel && panel.querySelector(".hm-title a[href]");
    if (!link) return;
    const head = new URL(link.href).searchParams.get("head");
    if (head === null) return;
    document.getElementById("head").value = head;
    heads.update({ now: true });
  }

  function panelOf(target) {
    return target instanceof Element ? target.closest("#fig-heads .hm-panel") : null;
  }

  // A click on a head's title or picture opens it (a modified click opens the link as usual);
  // on the chosen head a click on a cell only reads it (static/js/heatmap.js).
  document.addEventListener("click", function (event) {
    const panel = panelOf(event.target);
    if (!panel || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    const onTitle = event.target.closest(".hm-title a");
    if (!onTitle && panel.classList.contains("hm-chosen-panel")) return;
    event.preventDefault();
    open(panel);
  });

  // Enter on a focused panel (its arrows move between cells) opens its head.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.altKey || event.ctrlKey || event.metaKey) return;
    const panel = panelOf(event.target);
    if (!panel || !event.target.matches(".hm-svg")) return;
    event.preventDefault();
    open(panel);
  });
})();
