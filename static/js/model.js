// The /model page: a click on one head in the grid opens that head's stages. The link is
// the page's own URL with layer and head changed; the server renders the result.
"use strict";

(function () {
  function openHead(point) {
    const meta = point && point.data && point.data.meta;
    if (!meta) return;
    const url = new URL(window.location.href);
    url.searchParams.set("layer", String(meta[0]));
    url.searchParams.set("head", String(meta[1]));
    url.searchParams.delete("query");
    url.hash = "head-title";
    window.location.assign(url.toString());
  }

  document.addEventListener("DOMContentLoaded", function () {
    const grid = document.querySelector('[data-figure="fig-grid"]');
    const form = document.querySelector(".model-form");
    if (!grid || typeof grid.on !== "function") return;
    if (form && !new URL(window.location.href).searchParams.has("text")) {
      // The default page: carry its sentence into the URL so that a click keeps it.
      window.history.replaceState(null, "", "?" + new URLSearchParams(new FormData(form)));
    }
    grid.on("plotly_click", function (event) { openHead(event.points[0]); });
  });
})();
