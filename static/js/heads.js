// /heads live updates: the server renders the results for the form's state; this file
// only fetches that rendering, swaps it in, and keeps the address bar equal to the state.
"use strict";

(function () {
  const form = document.getElementById("heads-form");
  const results = document.getElementById("heads-results");
  if (!form || !results) return;
  let timer = null;
  let latest = 0;

  function state() {
    const block = document.getElementById("heads-state");
    return block ? JSON.parse(block.textContent) : null;
  }

  // The server may adjust the state (a preset, a g that does not divide h): mirror it.
  function syncForm(s) {
    const select = form.elements.kv_heads;
    select.replaceChildren();
    for (const g of s.kv_head_choices) {
      select.add(new Option(String(g), String(g), false, g === s.kv_heads));
    }
    form.elements.head.value = String(s.head);
    form.querySelector('button[value="gqa"]').disabled = !s.grouped_query;
  }

  function refresh(submitter) {
    const query = new URLSearchParams(new FormData(form, submitter)).toString();
    const ticket = ++latest;
    fetch("/heads/fragment?" + query, { headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (ticket !== latest) return; // a newer edit is on its way
        results.innerHTML = html;
        const s = state();
        if (s) {
          syncForm(s);
          history.replaceState(null, "", "/heads?" + s.query);
        }
        window.AttentionLab.drawFigures(results);
        document.dispatchEvent(new CustomEvent("heads:updated"));
      });
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  }

  form.addEventListener("input", later);
  form.addEventListener("change", later);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    clearTimeout(timer);
    refresh(event.submitter && event.submitter.name ? event.submitter : undefined);
  });
  results.addEventListener("click", function (event) {
    const link = event.target.closest("a[data-head]");
    if (!link) return;
    event.preventDefault();
    form.elements.head.value = link.dataset.head;
    refresh();
  });
})();
