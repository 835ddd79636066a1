// The /kernel page's stepping: the step links work without JavaScript (each is the URL of
// the next state); here they fetch the server's rendering of that URL and swap it in,
// ← and → step the walk-through in use, and Play steps on its own. No arithmetic here.
"use strict";

(function () {
  const PLAY_EVERY_MS = 1500;
  let active = "tiled";
  let timer = null;
  let playing = null;

  function bodies(root) {
    return root.querySelectorAll("[data-walk-body]");
  }

  // Swap in the server's rendering of `url`: the whole body of the walk-through that moved
  // (or of both, when `walk` is null), and only the step links of the other one, whose
  // figures stay as they are but whose links must carry the new state.
  async function show(url, push, focusId, walk) {
    const response = await fetch(url, { headers: { Accept: "text/html" } });
    if (!response.ok) return false;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const redraw = [];
    bodies(fresh).forEach(function (body) {
      const name = body.dataset.walkBody;
      const old = document.querySelector('[data-walk-body="' + name + '"]');
      if (!old) return;
      if (walk === null || name === walk) {
        const adopted = document.adoptNode(body);
        old.replaceWith(adopted);
        redraw.push(adopted);
      } else {
        old.querySelector(".stepper").replaceWith(document.adoptNode(body.querySelector(".stepper")));
      }
    });
    if (push) history.pushState(null, "", url);
    if (window.AttentionLab && window.AttentionLab.followState) window.AttentionLab.followState();
    if (window.AttentionLab && window.AttentionLab.drawFigures) {
      redraw.forEach(function (body) { window.AttentionLab.drawFigures(body); });
    }
    const target = focusId && document.getElementById(focusId);
    if (target) target.focus();
    return true;
  }

  function link(walk, dir) {
    return document.querySelector('a[data-walk="' + walk + '"][data-dir="' + dir + '"]');
  }

  function step(walk, dir) {
    const a = link(walk, dir);
    if (!a) return Promise.resolve(false);
    active = walk;
    const keepFocus = document.activeElement && document.activeElement.id;
    return show(a.href, true, keepFocus, walk);
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
      show(a.href, true, a.id, a.dataset.walk);
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
    if (event.target.closest("input, select, textarea, [contenteditable], .table-scroll")) return;
    const dir = { ArrowLeft: "prev", ArrowRight: "next" }[event.key];
    if (!dir) return;
    event.preventDefault();
    step(active, dir);
  });

  window.addEventListener("popstate", function () {
    stopPlaying();
    show(location.href, false, null, null);
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-play]").forEach(function (button) {
      button.dataset.playLabel = button.textContent;
      button.hidden = false;
    });
  });
})();
