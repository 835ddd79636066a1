// The cost calculator, live (static/js/live.js). No arithmetic here: when an input or the
// model choice changes, the page asks the server for its live fragment of the new state
// (`?fragment=1`) and swaps in the forms and the results; an input the server cannot use
// brings only the sentences saying so, and the results stay, marked as older.
"use strict";

(function () {
  if (!window.AttentionLab || !window.AttentionLab.live) return;

  function regions(doc) {
    if (doc.liveStatus === 422) {
      document.getElementById("cost-results").classList.add("stale");
      return ["page-messages"];
    }
    return ["preset-form", "cost-form", "page-messages", "cost-results", "measure"];
  }

  [["cost-form", 120], ["preset-form", 0]].forEach(function (form) {
    window.AttentionLab.live({ form: form[0], regions: regions, delay: form[1] });
  });

  // The timing run: its link works without JavaScript (the whole page, measured); here only
  // the section is swapped in when the run is done.
  document.addEventListener("click", function (event) {
    const link = event.target.closest("#measure-link");
    if (!link) return;
    event.preventDefault();
    link.setAttribute("aria-busy", "true");
    document.getElementById("measure-status").textContent = link.dataset.busy || "";
    const address = new URL(link.href);
    address.searchParams.set("fragment", "1");
    fetch(address.pathname + address.search, { headers: { Accept: "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        window.AttentionLab.swap(new DOMParser().parseFromString(html, "text/html"), ["measure"]);
      });
  });
})();
