// The /model page: a click on one head in the grid opens that head's stages. The grid is
// one heatmap of n × n blocks with a gap between them (meta.block = n + 1), so the clicked
// cell's row and column say which layer and head it shows. The link is the page's own URL
// with layer and head changed; the server renders the result.
"use strict";

(function () {
  function openHead(point) {
    const block = point && point.data && point.data.meta && point.data.meta.block;
    if (!block || !Array.isArray(point.pointNumber)) return;
    const row = point.pointNumber[0];
    const col = point.pointNumber[1];
    const url = new URL(window.location.href);
    url.searchParams.set("layer", String(Math.floor(row / block)));
    url.searchParams.set("head", String(Math.floor(col / block)));
    url.searchParams.delete("query");
    url.hash = "head-title";
    window.location.assign(url.toString());
  }

  // figures.js draws a figure far down the page only when it comes near the viewport or
  // the browser is idle; plotly gives the element its .on() when it starts drawing it.
  function whenDrawn(el, then) {
    if (typeof el.on === "function") { then(); return; }
    const watcher = new MutationObserver(function () {
      if (typeof el.on !== "function") return;
      watcher.disconnect();
      then();
    });
    watcher.observe(el, { childList: true });
  }

  document.addEventListener("DOMContentLoaded", function () {
    const grid = document.querySelector('[data-figure="fig-grid"]');
    const form = document.querySelector(".model-form");
    if (!grid) return;
    if (form && !new URL(window.location.href).searchParams.has("text")) {
      // The default page: carry its sentence into the URL so that a click keeps it.
      window.history.replaceState(null, "", "?" + new URLSearchParams(new FormData(form)));
    }
    whenDrawn(grid, function () {
      grid.on("plotly_click", function (event) { openHead(event.points[0]); });
    });
  });

  // A select marked data-autosubmit (the role filter, the heads drawn as lines) runs the
  // form as soon as it changes; its button stays for a browser without JavaScript.
  document.addEventListener("change", function (event) {
    const select = event.target;
    if (!(select instanceof HTMLSelectElement) || !select.hasAttribute("data-autosubmit")) return;
    if (select.form) select.form.requestSubmit();
  });
})();
