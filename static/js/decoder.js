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

  // A head's link, or its button in the grid of every head (pick=layer.head), selects that
  // layer and head; both work without JavaScript too.
  function open(layer, head) {
    document.getElementById("layer").value = layer;
    document.getElementById("head").value = head;
    const query = document.getElementById("query"); // there once a head is open
    if (query) query.value = "";
    decoder.update({ now: true, push: true });
  }

  document.addEventListener("click", function (event) {
    if (event.ctrlKey || event.metaKey || event.shiftKey) return;
    const link = event.target.closest("#decoder-results a[data-head][data-layer]");
    const pick = event.target.closest("#decoder-results button[name='pick']");
    if (!link && !pick) return;
    event.preventDefault();
    if (link) open(link.dataset.layer, link.dataset.head);
    else open.apply(null, pick.value.split("."));
  });
})();
