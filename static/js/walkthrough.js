// The walk-through, live (static/js/live.js): a step link (the list of steps, ← and →, and
// the arrow keys, which classroom.js turns into a click on those links) fetches the server's
// rendering of that step and swaps it in where the reader is, so the figure stays in view;
// "Predict first" and a guess (when it is sent) do the same. Every link and form still works
// without JavaScript. No arithmetic here.
"use strict";

(function () {
  if (!document.getElementById("walk-live") || !window.AttentionLab || !window.AttentionLab.live) return;

  // After a step, the step's figures are on screen: scrolled to only if they are not.
  function keepFigureInView(doc, job) {
    if (doc.title) document.title = doc.title;
    if (!job.url) return;
    const figures = document.querySelector(".step-figures");
    if (!figures) return;
    const box = figures.getBoundingClientRect();
    if (box.top < 0 || box.top > window.innerHeight * 0.6) figures.scrollIntoView({ block: "start" });
  }

  const options = window.AttentionLab.live({
    form: "walk-options",
    url: function (params) { return "/walkthrough?" + params.toString(); },
    regions: ["walk-live"],
    done: keepFigureInView,
  });

  // A guess is revealed when it is sent, never while it is typed.
  document.addEventListener("submit", function (event) {
    if (event.target.id !== "guess-form") return;
    event.preventDefault();
    const params = new URLSearchParams(new FormData(event.target, event.submitter || undefined));
    options.update({ url: "/walkthrough?" + params.toString(), now: true });
  });

  document.addEventListener("click", function (event) {
    const a = event.target.closest("#walk-live a[href^='/walkthrough']");
    if (!a || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    const url = new URL(a.href);
    options.update({ url: url.pathname + url.search, push: true, now: true });
  });

  window.addEventListener("popstate", function () {
    options.update({ url: location.pathname + location.search, now: true });
  });
})();
