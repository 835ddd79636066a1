// /heads, live (static/js/live.js): the server renders the form and the results for the
// form's state; its form carries the key/value-head choices that divide h, so no rule of
// the page is repeated here. This file only says which parts to take and where the state is.
"use strict";

(function () {
  if (!document.getElementById("heads-form") || !window.AttentionLab || !window.AttentionLab.live) return;

  function state(doc) {
    const block = doc.getElementById("heads-state");
    return block ? JSON.parse(block.textContent) : null;
  }

  const heads = window.AttentionLab.live({
    form: "heads-form",
    url: function (params) { return "/heads?" + params.toString(); },
    // A 422 (an input that cannot be used) brings the sentences saying so; the form stays as
    // typed, since the server's copy of it would be the defaults.
    regions: function (doc) {
      return doc.liveStatus === 422 ? ["heads-results"] : ["heads-form", "heads-results"];
    },
    address: function (doc) {
      const s = state(doc);
      return s ? "/heads?" + s.query : null;
    },
  });

  // A head's thumbnail (a link without JavaScript) selects that head.
  document.addEventListener("click", function (event) {
    const link = event.target.closest("#heads-results a[data-head]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    document.getElementById("head").value = link.dataset.head;
    heads.update({ now: true });
  });
})();
