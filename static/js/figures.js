// Draws every figure on the page from its JSON data block. No attention arithmetic here:
// the server computed the figure; this file only hands it to plotly.js.
// A figure near the viewport is drawn at once; the others when they come near it or when
// the browser is next idle, whichever is first. A figure whose data did not change is left.
"use strict";

(function () {
  const CONFIG = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png" } };
  const MARGIN = 200; // px around the viewport that count as "near"
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
    }, present ? {
      height: Math.max(layout.height || 0, 460) + 50,
      margin: Object.assign({}, layout.margin, { t: ((layout.margin || {}).t || 70) + 50 }),
    } : {});
  }

  function traces(data) {
    if (!presenting()) return data;
    return data.map(function (trace) {
      return trace.type !== "heatmap" ? trace : Object.assign({}, trace, {
        xgap: 4, ygap: 4, textfont: { size: 22 }, colorbar: { thickness: 24, len: 0.9 },
      });
    });
  }

  function render(el) {
    const text = pending.get(el);
    pending.delete(el);
    if (observer) observer.unobserve(el);
    if (text === undefined || !el.isConnected || el.drawnFrom === text) return;
    el.drawnFrom = text;
    const fig = JSON.parse(text);
    window.Plotly.react(el, traces(fig.data), themed(fig.layout), CONFIG);
  }

  function near(el) {
    const box = el.getBoundingClientRect();
    return box.bottom > -MARGIN && box.top < window.innerHeight + MARGIN;
  }

  // One figure per idle moment, more while the moment lasts: an edit is never kept waiting
  // behind a queue of off-screen drawing.
  function drawRest(deadline) {
    const next = pending.keys().next();
    if (next.done) return;
    render(next.value);
    if (deadline && deadline.timeRemaining() > 20) drawRest(deadline);
    else if (pending.size) later(drawRest);
  }

  function draw(root) {
    if (!window.Plotly) return;
    const plots = Array.from((root || document).querySelectorAll("[data-figure]"));
    // Measure every position first, then draw: reading a position after plotly has changed
    // the page would make the browser lay the whole page out again, once per figure.
    const nearby = plots.map(function (el) { return !observer || near(el); });
    plots.forEach(function (el, i) {
      const block = document.getElementById(el.dataset.figure);
      if (!block) return;
      pending.set(el, block.textContent);
      if (nearby[i]) render(el);
      else observer.observe(el);
    });
    if (pending.size) later(drawRest);
  }

  window.AttentionLab = Object.assign(window.AttentionLab || {}, {
    drawFigures: draw,
    pendingFigures: function () { return pending.size; },
  });
  document.addEventListener("DOMContentLoaded", function () { draw(document); });
})();
