// The walk-through, live (static/js/live.js): a step link (the list of steps, ← and →, and
// the arrow keys, which classroom.js turns into a click on those links), "Predict first" and
// a sent guess each ask the server for the page's fragment in that state (?fragment=1) and
// swap it in where the reader is; the address bar takes the state the server sent. Typing a
// guess reveals nothing: the guess form's one action, its button or Enter, sends it. Every
// link and form works without JavaScript too. No arithmetic here.
"use strict";

(function () {
  if (!document.getElementById("walk-live") || !window.AttentionLab || !window.AttentionLab.live) return;

  function fragment(href) {
    const url = new URL(href, window.location.href);
    url.hash = "";
    url.searchParams.set("fragment", "1");
    return url.pathname + url.search;
  }

  // The step's heading, words and picture fit the screen together: after a step, the heading
  // is scrolled to only if it went above the screen (a reader who scrolled down).
  function shown() {
    const live = document.getElementById("walk-live");
    if (live && live.dataset.title) document.title = live.dataset.title;
    const step = document.getElementById("walk-step");
    if (step && step.getBoundingClientRect().top < 0) step.scrollIntoView({ block: "start" });
  }

  const walk = window.AttentionLab.live({
    form: "walk-options",
    regions: ["walk-live"],
    done: shown,
  });

  document.addEventListener("submit", function (event) {
    if (event.target.id !== "guess-form") return;
    event.preventDefault();
    const params = new URLSearchParams(new FormData(event.target));
    walk.update({ url: fragment("/walkthrough?" + params.toString()), push: true, now: true });
  });

  document.addEventListener("click", function (event) {
    const a = event.target.closest("#walk-live a[href^='/walkthrough']");
    if (!a || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    walk.update({ url: fragment(a.href), push: true, now: true });
  });

  window.addEventListener("popstate", function () {
    walk.update({ url: fragment(window.location.href), now: true });
  });
})();
