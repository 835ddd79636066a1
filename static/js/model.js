// The /model page, live (static/js/live.js): the server runs the model and renders the page's
// fragment for the form's state; nothing is computed here. This file says which part to take
// and opens a head: a panel of the grid of every head (its title is a link that works without
// JavaScript too) or a head's button; the chosen head's stages then come into view.
"use strict";

(function () {
  if (!document.getElementById("model-form") || !window.AttentionLab || !window.AttentionLab.live) return;

  function showHead() {
    const title = document.getElementById("head-title");
    if (!title) return;
    title.scrollIntoView({ block: "start" });
    title.focus({ preventScroll: true });
  }

  const model = window.AttentionLab.live({
    form: "model-form",
    delay: 150, // a sentence is typed word by word: each run of the model takes a while
    // A 422 (an input that cannot be used) brings the sentences saying so; the form stays as
    // typed, since the server's copy of it would hold the defaults.
    regions: function (doc) { return doc.liveStatus === 422 ? ["model-results"] : ["live"]; },
    done: function (doc, job) {
      const picked = job.submitter && job.submitter.name === "open";
      if ((job.openHead || picked) && doc.liveStatus !== 422) showHead();
    },
  });

  // A click anywhere on a panel of the grid opens its head, as its title's link does.
  document.addEventListener("click", function (event) {
    if (!(event.target instanceof Element) || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const panel = event.target.closest("#fig-grid .hm-panel");
    const link = panel && panel.querySelector(".hm-title a");
    if (!link) return;
    const address = new URL(link.href, window.location.href).searchParams;
    document.getElementById("layer").value = address.get("layer");
    document.getElementById("head").value = address.get("head");
    event.preventDefault();
    model.update({ now: true, openHead: true });
  });
})();
