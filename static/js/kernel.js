// The /kernel page, live (static/js/live.js): an edit of the form asks the server for the
// page's live fragment of the new state (`?fragment=1`) and swaps in the form and the results;
// the step links work without JavaScript (each is the URL of the next state), and here they
// fetch that state's fragment through the same helper and swap in only the walk-through that
// moved (and the other one's step links, which carry the new state). ← and → step the
// walk-through in use, and Play steps on its own. No arithmetic here.
"use strict";

(function () {
  if (!document.getElementById("kernel-form") || !window.AttentionLab || !window.AttentionLab.live) return;
  const PLAY_EVERY_MS = 1500;
  const WALKS = ["tiled", "decode"];
  let active = "tiled";
  let timer = null;
  let playing = null;

  function fragment(url) {
    const address = new URL(url, window.location.href);
    address.searchParams.set("fragment", "1");
    return address.pathname + address.search;
  }

  const kernel = window.AttentionLab.live({
    form: "kernel-form",
    url: function (params) { return fragment("/kernel?" + params.toString()); },
    regions: function (doc, job) {
      if (doc.liveStatus === 422) { // the sentences say what to fix; the results are older
        document.getElementById("kernel-results").classList.add("stale");
        return ["page-messages"];
      }
      if (job.walk === null) return WALKS.map(function (w) { return w + "-body"; });
      if (job.walk) {
        const other = WALKS.filter(function (w) { return w !== job.walk; })[0];
        return [job.walk + "-body", other + "-stepper"];
      }
      return ["kernel-form", "page-messages", "kernel-results"];
    },
  });

  function link(walk, dir) {
    return document.querySelector('a[data-walk="' + walk + '"][data-dir="' + dir + '"]');
  }

  // A step of one walk-through (`walk`), or both (null: back in the history).
  function show(url, walk, push) {
    return kernel.update({ url: fragment(url), walk: walk, push: push, now: true });
  }

  function step(walk, dir) {
    const a = link(walk, dir);
    if (!a) return Promise.resolve(false);
    active = walk;
    return show(a.href, walk, true);
  }

  function stopPlaying() {
    if (timer) clearInterval(timer);
    timer = null;
    if (playing) {
      const button = document.querySelector('[data-play="' + playing + '"]');
      button.setAttribute("aria-pressed", "false");
      button.textContent = button.dataset.playLabel;
    }
    playing = null;
  }

  function startPlaying(walk, button) {
    stopPlaying();
    playing = walk;
    button.setAttribute("aria-pressed", "true");
    button.textContent = button.dataset.pauseLabel;
    timer = setInterval(function () {
      if (!link(walk, "next")) {
        stopPlaying();
        return;
      }
      step(walk, "next");
    }, PLAY_EVERY_MS);
  }

  document.addEventListener("click", function (event) {
    const a = event.target.closest("a[data-walk]");
    if (a && !event.ctrlKey && !event.metaKey && !event.shiftKey && event.button === 0) {
      event.preventDefault();
      active = a.dataset.walk;
      a.focus(); // the link keeps focus through the swap (live.js keeps the focused element)
      show(a.href, a.dataset.walk, true);
      return;
    }
    const play = event.target.closest("[data-play]");
    if (play) {
      if (playing === play.dataset.play) stopPlaying();
      else startPlaying(play.dataset.play, play);
    }
  });

  document.addEventListener("focusin", function (event) {
    const section = event.target.closest(".walk");
    if (section) active = section.id.replace("walk-", "");
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    // Typing in the form, or scrolling a wide table with the arrows, never steps.
    if (window.AttentionLab.typing() || event.target.closest(".table-scroll")) return;
    const dir = { ArrowLeft: "prev", ArrowRight: "next" }[event.key];
    if (!dir) return;
    event.preventDefault();
    step(active, dir);
  });

  window.addEventListener("popstate", function () {
    stopPlaying();
    show(location.pathname + location.search, null, false);
  });

  document.querySelectorAll("[data-play]").forEach(function (button) {
    button.dataset.playLabel = button.textContent;
    button.hidden = false;
  });
})();
