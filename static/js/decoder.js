// /decoder, live (static/js/live.js): the server renders the form and every result for the
// form's state; this file only says which part to take and opens a head from its links.
"use strict";

(function () {
  if (!document.getElementById("decoder-form") || !window.AttentionLab || !window.AttentionLab.live) return;

  const decoder = window.AttentionLab.live({
    form: "decoder-form",
    // A 422 brings the sentences saying what to fix; the form stays as typed.
    regions: function (doc) { return doc.liveStatus === 422 ? ["decoder-results"] : ["live"]; },
  });

  // A head's link (which works without JavaScript too) selects that layer and head.
  document.addEventListener("click", function (event) {
    const link = event.target.closest("#decoder-results a[data-head][data-layer]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    document.getElementById("layer").value = link.dataset.layer;
    document.getElementById("head").value = link.dataset.head;
    document.getElementById("query").value = "";
    decoder.update({ now: true, push: true });
  });
})();
