// Draws every figure on the page from its JSON data block. No attention arithmetic here:
// the server computed the figure; this file only hands it to plotly.js.
// The figures on screen are drawn at once, in one go unless a key is waiting (then it is
// handled between two figures); the others when they come near the screen or when the
// browser is next idle, whichever is first. A figure whose data did not change is left.
"use strict";

(function () {
  // The toolbar saves PNG (plotly's camera) and SVG, a vector image for slides and papers;
  // the SVG button's label comes from the page (<body data-svg-label>, translated).
  const SVG_ICON = {
    width: 1000,
    height: 1000,
    path: "M440 80H560V520H720L500 780L280 520H440ZM120 840H880V940H120Z",
  };

  function saveSvg(gd) {
    const title = String(((gd.layout || {}).title || {}).text || "");
    const name = title.replace(/<br>/g, " ").replace(/<[^>]*>|&[a-z]+;/g, "")
      .replace(/[\s/\\:*?"<>|]+/g, "_"); // a wrapped title's lines (fitTitle) part with "_"
    window.Plotly.downloadImage(gd, { format: "svg", filename: name.slice(0, 60) || "figure" });
  }

  function config() {
    return {
      responsive: true,
      displaylogo: false,
      toImageButtonOptions: { format: "png" },
      modeBarButtonsToAdd: [{
        name: "download-svg",
        title: document.body.dataset.svgLabel || "SVG",
        icon: SVG_ICON,
        click: saveSvg,
      }],
    };
  }
  const CELL_TEXT_MIN_PX = 10; // a cell number smaller than this is left to the hover text
  const MARGIN = 200; // px around the viewport that count as "near"
  const IDLE_MS = 20; // an idle moment at least this long (ms) has room for one figure
  const pending = new Map(); // plot element → JSON text still to draw
  const observer = "IntersectionObserver" in window
    ? new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) { if (entry.isIntersecting) render(entry.target); });
    }, { rootMargin: MARGIN + "px 0px" })
    : null;
  const later = window.requestIdleCallback
    ? function (job) { window.requestIdleCallback(job, { timeout: 300 }); }
    : function (job) { window.setTimeout(function () { job(null); }, 50); };

  // Presenter mode (body.present): white on black, big labels, tall plots, thick cell borders.
  function presenting() {
    return document.body.classList.contains("present");
  }

  function themed(layout) {
    const present = presenting();
    const dark = present || window.matchMedia("(prefers-color-scheme: dark)").matches;
    const ink = present ? "#ffffff" : dark ? "#e8e8e8" : "#1d1d1f";
    const font = Object.assign({ color: ink }, layout.font || {}, present ? { size: 20 } : {});
    return Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: dark ? "#3a3a3a" : "#d9d9d9",
      font: font,
    }, present ? Object.assign(bigTicks(layout), {
      height: Math.max(layout.height || 0, 420) + 30,
      // A title that makes room for itself (title.automargin) needs the top margin left as
      // small as it is: plotly pushes the plot down only when the title does not fit in it.
      margin: ((layout.title || {}).automargin) ? layout.margin
        : Object.assign({}, layout.margin, { t: ((layout.margin || {}).t || 70) + 30 }),
    }) : {});
  }

  // A chart's title wider than its figure (plotly draws a title on one line and cuts what does
  // not fit: long titles, Spanish ones, narrow figures) is set smaller, down to TITLE_MIN_PX,
  // then wrapped at its spaces, the top margin growing by its extra lines. Text is measured
  // in the title's font; a space inside a tag (<sup>, <span …>) is no place to break. Not
  // the heatmaps' titles, which sit above their key axis (title.automargin): plotly places a
  // smaller or wrapped one of those over the axis.
  const measure = document.createElement("canvas").getContext("2d");
  const PLOTLY_FONT = '"Open Sans", verdana, arial, sans-serif';
  const TITLE_SCALE = 1.4; // plotly's title font: 1.4 × the figure's font unless set
  const TITLE_MIN_PX = 11;

  function textWidth(text, px) {
    measure.font = px + "px " + PLOTLY_FONT;
    const plain = text.replace(/<[^>]*>/g, "").replace(/&[a-z]+;/g, "x");
    return measure.measureText(plain).width;
  }

  function wrapped(text, px, room) {
    const lines = [];
    text.split(/ (?![^<]*>)/).forEach(function (word) {
      const last = lines.length - 1;
      if (last >= 0 && textWidth(lines[last] + " " + word, px) <= room) lines[last] += " " + word;
      else lines.push(word);
    });
    return lines;
  }

  function fitTitle(layout, width) {
    const title = layout.title || {};
    const text = String(title.text || "");
    const px = (title.font || {}).size || ((layout.font || {}).size || 12) * TITLE_SCALE;
    const room = width - 16;
    const wide = text && !text.includes("<br>") && !title.automargin ? textWidth(text, px) : 0;
    if (wide <= room) return layout;
    const size = Math.max(TITLE_MIN_PX, Math.floor((px * room) / wide));
    const fitted = Object.assign({}, title, { font: Object.assign({}, title.font, { size: size }) });
    let margin = layout.margin;
    if (textWidth(text, size) > room) {
      const lines = wrapped(text, size, room);
      fitted.text = lines.join("<br>");
      const top = (margin || {}).t === undefined ? 100 : margin.t;
      margin = Object.assign({}, margin, { t: top + Math.ceil((lines.length - 1) * size * 1.3) });
    }
    return Object.assign({}, layout, { title: fitted, margin: margin });
  }

  // Presenter mode: tick labels (tokens) big enough for the back of the room, on every axis.
  function bigTicks(layout) {
    const out = {};
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        out[key] = Object.assign({}, layout[key], {
          tickfont: Object.assign({}, layout[key].tickfont, { size: 18 }),
        });
      }
    });
    return out;
  }

  // Cell numbers stay readable: each keeps its font size (22 px in presenter mode) or, where
  // the cells are too narrow for it at the figure's width, is left to the hover text.
  function fits(trace, plotWidth, layout, size) {
    const columns = Array.isArray(trace.x) ? trace.x.length : (trace.z[0] || []).length;
    const margin = layout.margin || {};
    const width = plotWidth - (margin.l || 70) - (margin.r || 10) - 40;
    const longest = (trace.text || []).reduce(function (m, row) {
      return Math.max(m, row.reduce(function (k, t) { return Math.max(k, String(t).length); }, 0));
    }, 0);
    return size >= CELL_TEXT_MIN_PX && width / Math.max(columns, 1) >= longest * size * 0.6 + 2;
  }

  // Token labels given one per cell (tickvals) stay legible at their font size: where the
  // cells are smaller than the font, each run of neighbouring labels keeps every k-th from its
  // first (a block of small multiples starts a run); the hover text still names every cell.
  function thinTicks(layout, data, el, width) {
    const trace = data[0];
    if (!trace || trace.type !== "heatmap" || !trace.z || !trace.z.length) return layout;
    const margin = layout.margin || {};
    const across = (width - (margin.l || 0) - (margin.r || 0) - 80) / trace.z[0].length;
    const down = ((layout.height || 300) - (margin.t || 0) - (margin.b || 0)) / trace.z.length;
    const cell = Math.max(1, Math.min(across, down)); // the cells are square where they are anchored
    const out = Object.assign({}, layout);
    const before = el.drawnTicks || {};
    el.drawnTicks = {};
    [["xaxis", trace.x], ["yaxis", trace.y]].forEach(function (pair) {
      const axis = layout[pair[0]];
      if (!axis || !Array.isArray(axis.tickvals) || !Array.isArray(pair[1])) return;
      const step = Math.ceil(((axis.tickfont || {}).size || 12) * 1.2 / cell);
      // The same labels as last time are handed over as the same arrays: plotly.react then
      // sees no change in them and leaves the axis (a layout-only redraw, such as the
      // outline moving to another head, stays cheap).
      const key = JSON.stringify([axis.tickvals, axis.ticktext, step]);
      const same = before[pair[0]];
      if (same && same.key === key) {
        el.drawnTicks[pair[0]] = same;
        out[pair[0]] = Object.assign({}, axis, { tickvals: same.vals, ticktext: same.text });
        return;
      }
      const remember = function (vals, text) {
        el.drawnTicks[pair[0]] = { key: key, vals: vals, text: text };
        out[pair[0]] = Object.assign({}, axis, { tickvals: vals, ticktext: text });
      };
      if (step <= 1) {
        remember(axis.tickvals, axis.ticktext);
        return;
      }
      const position = new Map(pair[1].map(function (c, i) { return [c, i]; }));
      const kept = [];
      let start = -2;
      let last = -2;
      axis.tickvals.forEach(function (v, k) {
        const i = position.get(v);
        if (i !== last + 1) start = i;
        last = i;
        if ((i - start) % step === 0) kept.push({ at: i, k: k });
      });
      // A run's last label gives way to the next run's first when they would touch.
      const shown = kept.filter(function (t, n) { return n === kept.length - 1 || kept[n + 1].at - t.at >= step; });
      remember(shown.map(function (t) { return axis.tickvals[t.k]; }),
        shown.map(function (t) { return axis.ticktext[t.k]; }));
    });
    return out;
  }

  function traces(data, width, layout) {
    const present = presenting();
    return data.map(function (trace) {
      if (trace.type !== "heatmap") return trace;
      // Thick borders only where the figure has cell borders at all: the /model grid's
      // cells are a few pixels wide, and 4 px gaps would leave only dots of them.
      const gap = trace.xgap ? 4 : 0;
      const out = present ? Object.assign({}, trace, {
        xgap: gap, ygap: gap, textfont: Object.assign({}, trace.textfont, { size: 22 }),
        colorbar: Object.assign({}, trace.colorbar, { thickness: 24, len: 0.9 }),
      }) : trace;
      if (out.texttemplate && !fits(out, width, layout, (out.textfont || {}).size || 12)) {
        return Object.assign({}, out, { texttemplate: "" });
      }
      return out;
    });
  }

  // `measured`: the plot's width read before any figure was drawn (see draw); without it the
  // width is read now, which lays out what the figures drawn before it changed.
  function render(el, measured) {
    const text = pending.get(el);
    pending.delete(el);
    if (observer) observer.unobserve(el);
    if (text === undefined || !el.isConnected || el.drawnFrom === text) return;
    el.drawnFrom = text;
    const width = measured || el.clientWidth || 300;
    const fig = JSON.parse(text);
    // Only the layout changed (an outline moved to the selected head): the traces already
    // drawn are handed back as they are, so plotly.react sees the same data and redraws
    // only what the layout changed instead of computing every heatmap again.
    const dataText = JSON.stringify([fig.data, fig.layout.margin, width]); // what traces() reads
    if (el.drawnData !== dataText) {
      el.drawnData = dataText;
      el.drawnTraces = traces(fig.data, width, fig.layout);
    }
    const layout = thinTicks(fitTitle(themed(fig.layout), width), fig.data, el, width);
    window.Plotly.react(el, el.drawnTraces, layout, config())
      .then(function () { el.dispatchEvent(new CustomEvent("figure:drawn", { bubbles: true })); });
  }

  // Drawn at once: what is on screen now. What is just off it follows when the browser is
  // idle or when it scrolls near (the observer's margin): an edit waits for no hidden plot.
  function near(el) {
    const box = el.getBoundingClientRect();
    return box.bottom > 0 && box.top < window.innerHeight;
  }

  // One figure per idle moment, more while the moment lasts: an edit is never kept waiting
  // behind a queue of off-screen drawing. A moment too short for a figure (the time left
  // before the next frame, right after an edit's figures were drawn) is let go, so that the
  // frame showing them is not held up; after the idle callback's timeout it is drawn anyway.
  function drawRest(deadline) {
    if (deadline && !deadline.didTimeout && deadline.timeRemaining() < IDLE_MS) {
      later(drawRest);
      return;
    }
    const next = pending.keys().next();
    if (next.done) return;
    render(next.value);
    if (deadline && deadline.timeRemaining() > IDLE_MS) drawRest(deadline);
    else if (pending.size) later(drawRest);
  }

  // The figures on screen still to draw (with the width each had before any was drawn), and
  // what to call once they are drawn.
  let onScreen = [];
  let whenShown = [];
  const scheduling = navigator.scheduling;
  const keyWaiting = scheduling && scheduling.isInputPending
    ? function () { return scheduling.isInputPending(); } : function () { return false; };
  const nextTask = (function () {
    const channel = new MessageChannel(); // a task at once (a nested setTimeout waits 4 ms)
    channel.port1.onmessage = function () { drawOnScreen(); };
    return function () { channel.port2.postMessage(null); };
  })();

  // A key that is waiting goes first: the figures left are drawn in the next task, from the
  // newest data by then (a newer answer's data replaces the older in `pending`).
  function drawOnScreen() {
    while (onScreen.length) {
      const next = onScreen.shift();
      render(next.el, next.width);
      if (onScreen.length && keyWaiting()) {
        nextTask();
        return;
      }
    }
    const callbacks = whenShown;
    whenShown = [];
    callbacks.forEach(function (shown) { shown(); });
  }

  // Draws the figures in `roots` (an element or a list of them; the page by default) and
  // calls `shown` once those on screen are drawn.
  function draw(roots, shown) {
    if (shown) whenShown.push(shown);
    const plots = window.Plotly ? [].concat(roots || document).flatMap(function (root) {
      return Array.from(root.querySelectorAll("[data-figure]"));
    }) : [];
    // Measure every position and width first, then draw: reading one after plotly has changed
    // the page would make the browser lay the page out again, once per figure.
    const nearby = plots.map(function (el) {
      return !observer || near(el) ? { el: el, width: el.clientWidth } : null;
    });
    const busy = onScreen.length > 0; // a key interrupted the last drawing: it goes on
    plots.forEach(function (el, i) {
      const block = document.getElementById(el.dataset.figure);
      if (!block) return;
      pending.set(el, block.textContent);
      if (!nearby[i]) observer.observe(el);
      else {
        onScreen = onScreen.filter(function (o) { return o.el !== el; });
        onScreen.push(nearby[i]);
      }
    });
    if (!busy) drawOnScreen();
    if (pending.size) later(drawRest);
  }

  window.AttentionLab = Object.assign(window.AttentionLab || {}, {
    drawFigures: draw,
    pendingFigures: function () { return pending.size; },
  });
  document.addEventListener("DOMContentLoaded", function () { draw(document); });
})();
