// Live updates, shared by every page that redraws while the reader edits. No attention
// arithmetic and no rule of the app here: the server renders the page's live fragment for the
// form's state (app/web/pages.py, `?fragment=1`); this file asks for it, swaps it in, and keeps
// the address bar and the header's links equal to the state the server sent (X-Page-State).
//
//   AttentionLab.live({ form, url, params, regions, delay, merge, done }) → { update(job) }
//     form     id of the form whose input/change/submit events ask for an update
//     url      (params) → the URL to fetch for the form's state (default: action + params)
//     params   (form, submitter, job) → URLSearchParams of the state (default: the fields)
//     regions  ids of the elements to take from the answer (the same ids on the page), or
//              (doc, job) → those ids (doc.liveStatus is the answer's input status: 422 when
//              the answer says what to fix)
//     merge    (older, newer) → one job, when an edit comes before the last one was shown
//     done     (doc, job) → called after a swap
//   AttentionLab.swap(doc, ids)   swap those elements in from a parsed answer
//   AttentionLab.followState()    rewrite the header's links from the address bar
//
// The rules it keeps, whatever the page:
//   - a key typed into a field waits `delay` ms for the next key (debounce); a choice (a
//     select, a box, a radio button) asks at once; Enter in a field applies the edit at once
//     and does nothing else (it never presses one of the form's buttons); a button asks at
//     once, with its name and value;
//   - a newer request aborts the one under way, and an answer that is not the newest is
//     ignored: one request, one swap;
//   - a swap changes only what differs: what the answer has the same stays in place (the
//     browser does not style, lay out or paint it again), so typing that changes a label
//     redraws that label, not the page;
//   - the element that has focus is never replaced or moved: its ancestors are kept and only
//     their other children are swapped, so focus, caret and selection survive every update;
//   - after each swap the document gets a "live:updated" event (what a benchmark listens to).
"use strict";

(function () {
  // The parameters that choose how a page is shown, not what it computes (app/web/classroom.py).
  const VIEW_PARAMS = (document.body.dataset.viewParams || "").split(" ").filter(Boolean);
  const KEYED_TYPES = /^(text|number|search|email|url|tel)$/; // fields typed into key by key

  // ---------------------------------------------------------------- swapping

  // Swapped whole when they differ: a field's value and a script's data live in properties
  // and caches that attributes and text nodes do not reach.
  const WHOLE = /^(INPUT|SELECT|TEXTAREA|SCRIPT)$/;

  function twinOf(node, candidates, index) {
    if (node.nodeType === 1 && node.id) {
      return candidates.find(function (c) { return c.nodeType === 1 && c.id === node.id; }) || null;
    }
    const same = candidates[index];
    return same && same.nodeName === node.nodeName ? same : null;
  }

  function copyAttributes(old, fresh, keepValue) {
    const had = old.attributes;
    for (let i = had.length - 1; i >= 0; i--) {
      if (!fresh.hasAttribute(had[i].name)) old.removeAttribute(had[i].name);
    }
    const given = fresh.attributes;
    for (let i = 0; i < given.length; i++) {
      const a = given[i];
      if (keepValue && (a.name === "value" || a.name === "checked")) continue;
      if (old.getAttribute(a.name) !== a.value) old.setAttribute(a.name, a.value);
    }
  }

  // Make `old` (on the page) what `fresh` (from the answer) is, changing only what differs:
  // what is the same stays in place, so the browser neither styles, lays out nor paints it
  // again. An element whose children are all empty elements (a heatmap's group of cells) is
  // replaced whole when it differs: one call, where setting each cell's attributes would
  // take hundreds; a text (a number, a label) is set in place. The focused element and its
  // ancestors are never replaced or moved, so focus, caret and selection survive; a drawn
  // chart stays (static/js/figures.js redraws it when its data changed).
  function morph(old, fresh, active) {
    if (old === active && (old.tagName === "INPUT" || old.tagName === "TEXTAREA")) {
      copyAttributes(old, fresh, true); // its value is what the reader is typing
      return;
    }
    if (old.isEqualNode(fresh)) return;
    if (old.nodeType === 1 && old.dataset.figure && old.dataset.figure === fresh.dataset.figure) return;
    const focused = active && old.contains(active);
    if (old.nodeName !== fresh.nodeName || (!focused && (WHOLE.test(old.nodeName) || leafy(fresh)))) {
      old.replaceWith(fresh);
      return;
    }
    if (old.nodeType !== 1) { // text
      old.nodeValue = fresh.nodeValue;
      return;
    }
    copyAttributes(old, fresh, false);
    if (old === active && old.tagName === "SELECT") { // its options change, the choice stays
      const value = old.value;
      old.replaceChildren.apply(old, Array.from(fresh.childNodes));
      old.value = value;
      return;
    }
    morphChildren(old, fresh, active);
  }

  // Whether `node` has child elements and none of them has children of its own.
  function leafy(node) {
    if (!node.firstElementChild) return false;
    for (let child = node.firstElementChild; child; child = child.nextElementSibling) {
      if (child.firstChild) return false;
    }
    return true;
  }

  function morphChildren(old, fresh, active) {
    if (old.childNodes.length === fresh.childNodes.length) {
      // from the last: a fresh child moved into the page leaves the ones before it in place
      for (let i = old.childNodes.length - 1; i >= 0; i--) {
        morph(old.childNodes[i], fresh.childNodes[i], active);
      }
      return;
    }
    const olds = Array.from(old.childNodes);
    const freshKids = Array.from(fresh.childNodes);
    const keeper = active && old.contains(active) ? olds.find(function (c) { return c.contains(active); }) : null;
    const twin = keeper && twinOf(keeper, freshKids, olds.indexOf(keeper));
    if (!twin) { // nothing focused here, or the server dropped the field being edited
      old.replaceChildren.apply(old, freshKids);
      return;
    }
    olds.forEach(function (c) { if (c !== keeper) c.remove(); });
    const at = freshKids.indexOf(twin);
    freshKids.slice(0, at).forEach(function (c) { old.insertBefore(c, keeper); });
    freshKids.slice(at + 1).forEach(function (c) { old.appendChild(c); });
    morph(keeper, twin, active);
  }

  function swap(doc, ids) {
    const swapped = [];
    ids.forEach(function (id) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (!fresh || !old) return;
      morph(old, fresh, document.activeElement); // moving a node adopts it
      if (document.getElementById(id)) swapped.push(document.getElementById(id));
    });
    if (window.AttentionLab.drawFigures) window.AttentionLab.drawFigures(swapped);
    return swapped;
  }

  // ---------------------------------------------------------------- the address bar and header

  function withState(href, state) {
    const link = new URL(href, window.location.href);
    if (link.origin !== state.origin || link.pathname !== state.pathname) return null;
    const next = new URL(state.href);
    VIEW_PARAMS.forEach(function (name) {
      next.searchParams.delete(name);
      link.searchParams.getAll(name).forEach(function (v) { next.searchParams.append(name, v); });
    });
    return next.pathname + next.search + link.hash;
  }

  // The presenter, language and embed links were rendered for the state the page was
  // loaded with: after live edits each gets the address bar's state, keeping its own view.
  function followState() {
    const state = new URL(window.location.href);
    document.querySelectorAll(".site-header a[href], .embed-bar a[href]").forEach(function (a) {
      const raw = a.getAttribute("href");
      const url = new URL(raw, window.location.href);
      if (url.origin === state.origin && url.pathname === "/embed" && url.searchParams.has("src")) {
        const src = withState(url.searchParams.get("src"), state);
        if (src) {
          url.searchParams.set("src", src);
          a.setAttribute("href", url.pathname + url.search);
        }
        return;
      }
      if (url.pathname === "/" && !url.search && a.classList.contains("brand")) return;
      const href = withState(raw, state);
      if (href) a.setAttribute("href", href);
    });
  }

  // ---------------------------------------------------------------- the live loop

  function formParams(form, submitter) {
    const params = new URLSearchParams();
    new FormData(form, submitter || undefined).forEach(function (value, key) {
      params.append(key, value);
    });
    return params;
  }

  // The address for the state an answer shows: the page's path and the state the server sent.
  function stateAddress(doc, url) {
    if (doc.pageState === null || doc.pageState === undefined) return url;
    return new URL(url, window.location.href).pathname + "?" + doc.pageState;
  }

  function live(options) {
    const delay = options.delay === undefined ? 60 : options.delay;
    const paramsOf = options.params || formParams;
    const merge = options.merge || function (older, newer) { return newer; };
    let timer = null;
    let ticket = 0;
    let pending = null;
    let owed = null; // the edits whose answer is not on the page yet, merged into one job

    function form() { return document.getElementById(options.form); }

    function urlFor(params) {
      if (options.url) return options.url(params);
      const action = new URL(form().action, window.location.href);
      params.set("fragment", "1");
      return action.pathname + "?" + params.toString();
    }

    function show(job, url, doc) {
      if (owed === job) owed = null;
      const ids = typeof options.regions === "function" ? options.regions(doc, job) : options.regions;
      const address = stateAddress(doc, url); // before the swap moves the answer's parts
      swap(doc, ids);
      if (doc.liveStatus !== 422) {
        if (job.push) window.history.pushState(null, "", address);
        else window.history.replaceState(null, "", address);
        followState();
      }
      if (options.done) options.done(doc, job);
      document.dispatchEvent(new CustomEvent("live:updated", { detail: { url: address } }));
    }

    function run(job) {
      const f = form();
      if (!f) return Promise.resolve(false);
      const url = job.url || urlFor(paramsOf(f, job.submitter, job));
      const mine = ++ticket;
      if (pending) pending.abort();
      pending = new AbortController();
      return fetch(url, { signal: pending.signal, headers: { Accept: "text/html" } })
        .then(function (response) {
          const status = Number(response.headers.get("X-Input-Status")) || response.status;
          const state = response.headers.get("X-Page-State");
          return response.text().then(function (html) { return [html, status, state]; });
        })
        .then(function (answer) {
          if (mine !== ticket) return false; // a newer edit was sent
          const doc = new DOMParser().parseFromString(answer[0], "text/html");
          doc.liveStatus = answer[1];
          doc.pageState = answer[2];
          show(job, url, doc);
          return true;
        })
        .catch(function (error) {
          if (error.name === "AbortError") return false;
          document.querySelectorAll("[data-live-stale]").forEach(function (el) {
            el.classList.add("stale");
          });
          return false;
        });
    }

    function update(job) {
      clearTimeout(timer);
      owed = owed ? merge(owed, job || {}) : job || {};
      if (owed.now) return run(owed);
      return new Promise(function (resolve) {
        timer = setTimeout(function () { resolve(owed ? run(owed) : false); }, delay);
      });
    }

    function mine(event) {
      const f = form();
      return f && (event.target.form === f || f.contains(event.target));
    }

    // Keys typed into a field ask on input, after the debounce; selects, boxes and radio
    // buttons ask on change, at once (a choice is made in one go: nothing to wait for).
    document.addEventListener("input", function (event) {
      if (mine(event) && keyed(event.target)) update({ target: event.target });
    });
    document.addEventListener("change", function (event) {
      if (mine(event) && !keyed(event.target)) update({ target: event.target, now: true });
    });
    // Enter in a field applies what was typed, now, and nothing else: without this the
    // browser would submit the form with its first button (a "Generate" or a preset).
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || !mine(event) || !keyed(event.target)) return;
      if (event.target.tagName === "TEXTAREA") return; // a new line there
      event.preventDefault();
      update({ target: event.target, now: true });
    });
    document.addEventListener("submit", function (event) {
      if (event.target !== form()) return;
      event.preventDefault();
      update({ now: true, submitter: event.submitter || null, target: event.submitter });
    });
    return { update: update };
  }

  function keyed(el) {
    return el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && KEYED_TYPES.test(el.type));
  }

  // A form field that has focus owns the keyboard: no page shortcut may fire from it.
  function typing() {
    const el = document.activeElement;
    return Boolean(el && el.closest && el.closest("input, textarea, select, [contenteditable]"));
  }

  window.AttentionLab = Object.assign(window.AttentionLab || {}, {
    live: live,
    swap: swap,
    followState: followState,
    typing: typing,
  });
})();
