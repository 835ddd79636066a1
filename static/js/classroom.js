// Classroom mode on every page. The server renders each mode (the URL carries it); this file
// follows links on keys, flips the "controls shown" class in presenter mode, opens the list
// of keys, and keeps the view (language, presenter mode, embed, lesson: <body data-carry>) in
// the URLs that page scripts write to the address bar or fetch, as the server keeps it in
// links and forms. The keys (listed on screen by templates/classroom/_shortcuts.html):
//   ?        the list of keys (Escape closes it and gives the focus back)
//   p        presenter mode on or off (follows the header's button)
//   c        in presenter mode: show or tuck away the editing controls
//   ← and →  previous / next step where the page has rel="prev" / rel="next" links
"use strict";

(function () {
  const carry = new URLSearchParams(document.body.dataset.carry || "");

  function withCarry(url) {
    const target = new URL(String(url), window.location.href);
    if (target.origin !== window.location.origin) return url;
    carry.forEach(function (value, name) {
      if (!target.searchParams.has(name)) target.searchParams.append(name, value);
    });
    return target.pathname + target.search + target.hash;
  }

  if (carry.toString()) {
    ["pushState", "replaceState"].forEach(function (name) {
      const original = window.history[name].bind(window.history);
      window.history[name] = function (state, title, url) {
        return original(state, title, url == null ? url : withCarry(url));
      };
    });
    const originalFetch = window.fetch.bind(window);
    window.fetch = function (input, init) {
      return originalFetch(typeof input === "string" ? withCarry(input) : input, init);
    };
  }

  // An address to copy elsewhere (embed code, lesson link, curl example) is rendered as a path
  // unless the server has a PUBLIC_URL: it is completed here with the address the browser
  // shows, never with anything a request could claim (the Host header).
  function fillOrigin(root) {
    root.querySelectorAll("[data-fill-origin]").forEach(function (el) {
      const path = el.getAttribute("data-fill-origin");  // as it is written in the element
      el.removeAttribute("data-fill-origin");
      if (path.charAt(0) !== "/" || path.charAt(1) === "/") return;  // PUBLIC_URL made it whole
      const full = window.location.origin + path;
      if ("value" in el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA")) {
        el.value = el.value.replace(path, full);
      } else {
        el.textContent = el.textContent.replace(path, full);
      }
    });
  }

  // A form field with focus owns the keyboard: p, c and the arrows are the field's keys then.
  function typing(event) {
    const el = document.activeElement && document.activeElement !== document.body
      ? document.activeElement : event.target;
    return Boolean(el && el.closest && el.closest("input, textarea, select, [contenteditable]"));
  }

  // A click, not a jump: a page that updates itself (the walk-through's steps) may take the
  // link over; elsewhere the click follows it.
  function follow(selector) {
    const link = document.querySelector(selector);
    if (link) link.click();
  }

  // The toggle's words say what the next press does ("Hide controls" once they are open).
  function toggleControls() {
    const button = document.querySelector("[data-controls-toggle]");
    if (!button) return;
    const open = document.body.classList.toggle("controls-open");
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? button.dataset.labelOpen : button.dataset.labelClosed;
  }

  // The list of keys: a modal dialog, so Escape closes it (the browser's own cancel) and the
  // page behind it takes no keys; the focus goes back to where it was before it opened.
  let returnFocus = null;

  function openHelp() {
    const help = document.getElementById("shortcuts");
    if (!help || help.open) return;
    returnFocus = document.activeElement;
    help.showModal();
  }

  function helpIsOpen() {
    const help = document.getElementById("shortcuts");
    return Boolean(help && help.open);
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event) || helpIsOpen()) return;
    if (event.key === "?") {
      event.preventDefault();
      openHelp();
    } else if (event.key === "p" || event.key === "P") follow("[data-present-toggle]");
    else if (event.key === "c" || event.key === "C") toggleControls();
    else if (event.target.closest(".table-scroll")) return;  // arrows scroll a wide table
    else if (event.key === "ArrowLeft") follow("a[rel~='prev']");
    else if (event.key === "ArrowRight") follow("a[rel~='next']");
  });

  document.addEventListener("DOMContentLoaded", function () {
    fillOrigin(document);
    // live updates swap in server-rendered parts: complete their addresses too
    new MutationObserver(function () { fillOrigin(document); })
      .observe(document.body, { childList: true, subtree: true });
    const help = document.getElementById("shortcuts");
    if (help) {
      help.addEventListener("close", function () {
        if (returnFocus && returnFocus.isConnected && returnFocus.focus) returnFocus.focus();
        returnFocus = null;
      });
      help.querySelector("[data-help-close]").addEventListener("click", function () {
        help.close();
      });
      document.querySelectorAll("[data-help-open]").forEach(function (opener) {
        opener.hidden = false;
        opener.addEventListener("click", openHelp);
      });
    }
    const button = document.querySelector("[data-controls-toggle]");
    // Only where presenter mode tucked something away (the same selector as app.css).
    if (button && document.querySelector("main form:not([data-keep]), main .controls")) {
      button.hidden = false;
      button.addEventListener("click", toggleControls);
    }
    // A page that updates itself (the lab) keeps its state in the address bar: the lesson
    // link is made from that, not from the state the page was first served with.
    const maker = document.querySelector(".lesson-maker form");
    if (maker) {
      maker.addEventListener("submit", function () {
        maker.querySelectorAll("input[type=hidden]").forEach(function (el) { el.remove(); });
        new URLSearchParams(window.location.search).forEach(function (value, name) {
          if (name.indexOf("lesson") === 0) return;
          const input = document.createElement("input");
          input.type = "hidden";
          input.name = name;
          input.value = value;
          maker.prepend(input);
        });
      });
    }
    document.querySelectorAll("[data-select-on-focus]").forEach(function (input) {
      input.addEventListener("focus", function () { input.select(); });
    });
  });
})();
