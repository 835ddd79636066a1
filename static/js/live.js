// Live updates, shared by every page that redraws while the reader edits. No attention
// arithmetic and no rule of the app here: the server renders the page for the form's state;
// this file asks for that rendering, swaps in the parts that changed, and keeps the address
// bar and the header's links equal to the state.
//
//   AttentionLab.live({ form, url, regions, delay, early, address, done }) → { update(job) }
//     form     id of the form whose input/change/submit events ask for an update
//     update   asks for the form's state; a job { url, push: true } asks for that URL instead
//              (a step link) and adds it to the history rather than replacing the entry
//     url      (params) → the URL to fetch for the form's state (default: action + params)
//     params   (form, submitter) → URLSearchParams of the state (default: the form's fields)
//     early    a key asks at once and its answer waits out the debounce, instead of the
//              request waiting for it (for pages whose answers are quick to compute); a key
//              within a run of quick keys still waits, so the page is redrawn once they stop
//     regions  ids of the elements to take from the answer (the same ids on the page), or
//              (doc, job) → those ids
//     address  (doc, url) → the URL for the address bar, or null to leave it
//     done     (doc, job) → called after a swap; `job` is what update() was given
//     merge    (older, newer) → one job, when an edit comes before the last one's answer was
//              shown (default: the newer; the lab keeps "structural" from either)
//   (a regions or address function can read the answer's HTTP status as doc.liveStatus)
//   AttentionLab.swap(doc, ids)   swap those elements in from a parsed answer
//   AttentionLab.followState()    rewrite the header's links from the address bar
//
// The rules it keeps, whatever the page:
//   - a key typed into a field waits `delay` ms for the next key (debounce); a choice (a
//     select, a box, a radio button, a button) asks at once; a newer request aborts the one
//     under way, and an answer that is not the newest is ignored;
//   - the element that has focus is never replaced or moved: its ancestors are kept and only
//     their other children are swapped, so focus, caret and selection survive every update;
//   - a drawn plot is kept and redrawn in place (plotly.react) from its new data block; a swap
//     is counted (data-live-redraws) once the figures on screen show it.
"use strict";

(function () {
  // The parameters that choose how a page is shown, not what it computes (app/web/classroom.py).
  const VIEW_PARAMS = (document.body.dataset.viewParams || "").split(" ").filter(Boolean);
  const KEYED_TYPES = /^(text|number|search|email|url|tel)$/; // fields typed into key by key
  let redraws = 0;

  // ---------------------------------------------------------------- swapping

  function twinOf(node, candidates, index) {
    if (node.nodeType === 1 && node.id) {
      return candidates.find(function (c) { return c.nodeType === 1 && c.id === node.id; }) || null;
    }
    const same = candidates[index];
    return same && same.nodeName === node.nodeName ? same : null;
  }

  function copyAttributes(old, fresh, keepValue) {
    Array.from(old.attributes).forEach(function (a) {
      if (!fresh.hasAttribute(a.name)) old.removeAttribute(a.name);
    });
    Array.from(fresh.attributes).forEach(function (a) {
      if (keepValue && (a.name === "value" || a.name === "checked")) return;
      if (old.getAttribute(a.name) !== a.value) old.setAttribute(a.name, a.value);
    });
  }

  // `old` contains the focused element: keep it and the path down to it, swap the rest.
  function keepFocused(old, fresh, active) {
    if (old === active) {
      copyAttributes(old, fresh, true); // its value is what the reader is typing
      if (old.tagName !== "INPUT" && old.tagName !== "TEXTAREA") { // a select, a link, a button
        const value = old.value;
        old.replaceChildren.apply(old, Array.from(fresh.childNodes));
        if (old.tagName === "SELECT") old.value = value;
      }
      return;
    }
    const keeper = Array.from(old.childNodes).find(function (c) { return c.contains(active); });
    const freshKids = Array.from(fresh.childNodes);
    const twin = twinOf(keeper, freshKids, Array.from(old.childNodes).indexOf(keeper));
    if (!twin) { // the server dropped the field being edited: nothing left to keep
      old.replaceWith(fresh);
      return;
    }
    Array.from(old.childNodes).forEach(function (c) { if (c !== keeper) c.remove(); });
    const at = freshKids.indexOf(twin);
    freshKids.slice(0, at).forEach(function (c) { old.insertBefore(c, keeper); });
    freshKids.slice(at + 1).forEach(function (c) { old.appendChild(c); });
    copyAttributes(old, fresh, false);
    keepFocused(keeper, twin, active);
  }

  function keepPlots(old, fresh) {
    old.querySelectorAll("[data-figure]").forEach(function (plot) {
      const twin = fresh.querySelector('[data-figure="' + CSS.escape(plot.dataset.figure) + '"]');
      if (twin && plot !== document.activeElement) twin.replaceWith(plot);
    });
  }

  function swapOne(old, fresh) {
    const active = document.activeElement;
    keepPlots(old, fresh);
    if (active && active !== document.body && old.contains(active)) keepFocused(old, fresh, active);
    else old.replaceWith(fresh);
  }

  // A swap is counted in data-live-redraws once its figures on screen are drawn too.
  function swap(doc, ids) {
    const swapped = [];
    const t0 = performance.now();
    ids.forEach(function (id) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (!fresh || !old) return;
      swapOne(old, document.adoptNode(fresh));
      if (document.getElementById(id)) swapped.push(document.getElementById(id));
    });
    const t1 = performance.now();
    const shown = function () {
      // How long the last swap took, by part (read by bench/bench_page.py).
      window.AttentionLab.lastSwap = { dom: t1 - t0, figures: performance.now() - t1 };
      redraws += 1;
      document.documentElement.dataset.liveRedraws = String(redraws);
    };
    if (window.AttentionLab.drawFigures) window.AttentionLab.drawFigures(swapped, shown);
    else shown();
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
    const formId = options.form;
    const paramsOf = options.params || formParams;
    let timer = null;
    let waiting = false; // an edit is waiting out the debounce
    let ticket = 0;
    let pending = null;
    let owed = null; // the job whose answer is not on the page yet (merged with newer ones)
    // early: a key asks at once and its answer waits out the debounce (instead of the request
    // waiting for it), for pages whose answer is quick to compute.
    const early = Boolean(options.early);
    let held = null; // (show?) → settles the answer that waits for the debounce
    let lastEdit = -Infinity;
    let asking = 0; // ms the last answer took to come (the request) and to be parsed
    let drawing = 0; // ms the last answer took to swap in and draw
    const merge = options.merge || function (older, newer) { return newer; };

    function form() { return document.getElementById(formId); }

    function urlFor(params) {
      if (options.url) return options.url(params);
      const action = new URL(form().action, window.location.href);
      return action.pathname + "?" + params.toString();
    }

    // `doc`: the answer, parsed (as soon as it came: an answer that waits out the debounce
    // is ready to swap in when it ends).
    function show(job, url, doc, timing) {
      if (owed === job) owed = null;
      const t1 = performance.now();
      const ids = typeof options.regions === "function" ? options.regions(doc, job) : options.regions;
      const address = options.address ? options.address(doc, url) : stateAddress(doc, url); // before the swap
      // How long the last update took up to the swap, by part (read by bench/bench_page.py;
      // lastSwap has the rest): from the edit to the swap, the request, the parsing.
      window.AttentionLab.lastUpdate = Object.assign({ answered: t1 - (job.at || t1) }, timing);
      swap(doc, ids); // swap moves the answer's parts out of `doc`
      if (address) {
        if (job.push) window.history.pushState(null, "", address);
        else window.history.replaceState(null, "", address);
        followState();
      }
      if (options.done) options.done(doc, job);
      asking = timing.fetch + timing.parse;
      drawing = performance.now() - t1;
      return true;
    }

    function run(job) {
      const f = form();
      if (!f) return Promise.resolve(false);
      const url = job.url || urlFor(paramsOf(f, job.submitter, job));
      const mine = ++ticket;
      if (held) held(false); // a newer request: the answer kept for the older one is dropped
      held = null;
      if (pending) pending.abort();
      pending = new AbortController();
      const t0 = performance.now();
      const headers = { Accept: "text/html", "X-Live-Update": "1" };
      return fetch(url, { signal: pending.signal, headers: headers })
        .then(function (response) {
          // Input the page cannot use comes back 200 with its real status beside it, so the
          // console shows no failed request while the teacher is mid-edit.
          const status = Number(response.headers.get("X-Input-Status")) || response.status;
          const state = response.headers.get("X-Page-State");
          return response.text().then(function (html) { return [html, status, state]; });
        })
        .then(function (answer) {
          if (mine !== ticket) return false; // a newer edit was sent
          // While the reader may still be typing (the debounce), drawing would only hold the
          // page up: an answer asked for early waits for the debounce to end.
          if (waiting && !job.early) return false;
          const t1 = performance.now();
          const doc = new DOMParser().parseFromString(answer[0], "text/html");
          doc.liveStatus = answer[1]; // 422: the answer says what to fix
          doc.pageState = answer[2]; // the state the answer shows, as the address bar writes it
          const timing = { fetch: t1 - t0, parse: performance.now() - t1 };
          if (!waiting) return show(job, url, doc, timing);
          return new Promise(function (resolve) {
            held = function (go) { resolve(go && show(job, url, doc, timing)); };
          });
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
      waiting = false;
      owed = owed ? merge(owed, job || {}) : job || {};
      // When the key reached the page (a key held up behind a redraw counts from then).
      const now = (job && job.keyAt) || performance.now();
      const gap = now - lastEdit; // since the edit before this one
      lastEdit = now;
      owed.at = now;
      if (owed.now) return run(owed);
      waiting = true;
      // A key that comes sooner after the last than an answer takes to draw is part of a run
      // of keys: it asks once the debounce is over, as without `early`, so that the page is
      // not redrawn between two keys (which would hold the next one up).
      owed.early = early && gap >= Math.max(delay, asking) + drawing;
      const asked = owed.early ? run(owed) : null;
      return new Promise(function (resolve) {
        timer = setTimeout(function () {
          waiting = false;
          if (asked) {
            const keep = held;
            held = null;
            if (keep) keep(true);
            resolve(asked);
          } else resolve(owed ? run(owed) : false);
        }, delay);
      });
    }

    function mine(event) {
      const f = form();
      return f && (event.target.form === f || f.contains(event.target));
    }

    // Keys typed into a field ask on input, after the debounce; selects, boxes and radio
    // buttons ask on change, at once (a choice is made in one go: nothing to wait for).
    let keyAt = 0; // the time of the key whose input event comes next (none for a paste)
    document.addEventListener("keydown", function (event) { keyAt = event.timeStamp; }, true);
    document.addEventListener("input", function (event) {
      const at = keyAt;
      keyAt = 0;
      if (mine(event) && keyed(event.target)) update({ target: event.target, keyAt: at });
    });
    document.addEventListener("change", function (event) {
      if (mine(event) && !keyed(event.target)) update({ target: event.target, now: true });
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
