// The cost calculator's live updates. No arithmetic here: when an input or the model choice
// changes, the page asks the server for its own rendering of the new URL and swaps it in.
"use strict";

(function () {
  const SWAPPED = ["preset-form", "cost-form", "cost-results", "measure-link"];

  function swap(html, ids) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    ids.forEach(function (id) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (!fresh || !old) return;
      if (old.tagName === "FORM" && old.contains(document.activeElement)) {
        // Keep the field being typed in: refresh only the other fields' values.
        fresh.querySelectorAll("input, select").forEach(function (el) {
          const mine = old.elements[el.name];
          if (mine && mine !== document.activeElement) mine.value = el.value;
        });
        return;
      }
      old.replaceWith(fresh);
      window.AttentionLab.drawFigures(fresh);
    });
  }

  function queryOf(form) {
    const params = new URLSearchParams();
    new FormData(form).forEach(function (value, key) {
      if (value !== "") params.append(key, value);
    });
    return params.toString();
  }

  let pending = null;
  function load(url, ids) {
    if (pending) pending.abort();
    pending = new AbortController();
    return fetch(url, { signal: pending.signal, headers: { Accept: "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        swap(html, ids);
        window.history.replaceState(null, "", url);
      })
      .catch(function (error) { if (error.name !== "AbortError") throw error; });
  }

  let timer = null;
  document.addEventListener("input", function (event) {
    const form = event.target.form;
    if (!form || form.id !== "cost-form") return;
    clearTimeout(timer);
    timer = setTimeout(function () { load("/cost?" + queryOf(form), SWAPPED); }, 300);
  });

  document.addEventListener("change", function (event) {
    const form = event.target.form;
    if (!form || form.id !== "preset-form" || event.target.value === "") return;
    load("/cost?" + queryOf(form), SWAPPED);
  });

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (form.id !== "cost-form" && form.id !== "preset-form") return;
    event.preventDefault();
    clearTimeout(timer);
    load("/cost?" + queryOf(form), SWAPPED);
  });

  document.addEventListener("click", function (event) {
    const link = event.target.closest("#measure-link");
    if (!link) return;
    event.preventDefault();
    link.setAttribute("aria-busy", "true");
    document.getElementById("measure-status").textContent = link.dataset.busy || "";
    fetch(link.href, { headers: { Accept: "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) { swap(html, ["measure"]); });
  });
})();
