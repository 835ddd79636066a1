// The cost calculator, live (static/js/live.js). No arithmetic here: when an input or the
// model choice changes, the page asks the server for its rendering of the new URL and
// swaps in the forms and the results.
"use strict";

(function () {
  if (!window.AttentionLab || !window.AttentionLab.live) return;
  const SWAPPED = ["preset-form", "cost-form", "cost-results", "measure-link"];

  function filled(form, submitter) {
    const params = new URLSearchParams();
    new FormData(form, submitter || undefined).forEach(function (value, key) {
      if (value !== "") params.append(key, value);
    });
    return params;
  }

  ["cost-form", "preset-form"].forEach(function (id) {
    window.AttentionLab.live({
      form: id,
      params: filled,
      url: function (params) { return "/cost?" + params.toString(); },
      regions: SWAPPED,
      delay: id === "cost-form" ? 120 : 0,
    });
  });

  document.addEventListener("click", function (event) {
    const link = event.target.closest("#measure-link");
    if (!link) return;
    event.preventDefault();
    link.setAttribute("aria-busy", "true");
    document.getElementById("measure-status").textContent = link.dataset.busy || "";
    fetch(link.href, { headers: { Accept: "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        window.AttentionLab.swap(new DOMParser().parseFromString(html, "text/html"), ["measure"]);
      });
  });
})();
