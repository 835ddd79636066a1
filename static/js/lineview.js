// The line view on /model: word pieces in two columns (queries left, keys right) and one
// line per query–key pair and head, drawn by the server as SVG (width and opacity already
// follow the weight). This file only isolates: pointing at a piece, or focusing it with the
// keyboard, keeps that piece's lines and fades the rest, and says in words what they show.
// Keys: Tab reaches the first piece; ↑ ↓ move within a column, ← → cross to the other
// column at the same row, Home and End jump to the ends, Escape shows every line again.
"use strict";

(function () {
  function pieces(svg, side) {
    return Array.prototype.slice.call(svg.querySelectorAll(".lv-tok." + side));
  }

  function isolate(svg, tok) {
    const side = tok.classList.contains("lv-q") ? "q" : "k";
    const index = tok.getAttribute("data-i");
    const lines = svg.querySelectorAll(".lv-line");
    let kept = [];
    lines.forEach(function (line) {
      const on = line.getAttribute("data-" + side) === index;
      line.classList.toggle("lv-on", on);
      if (on) kept.push(line);
    });
    svg.querySelectorAll(".lv-tok").forEach(function (t) { t.classList.remove("lv-active"); });
    tok.classList.add("lv-active");
    svg.classList.add("lv-isolating");
    const status = document.getElementById(svg.getAttribute("data-status"));
    if (!status) return;
    kept.sort(function (a, b) { return b.getAttribute("data-w") - a.getAttribute("data-w"); });
    const top = kept[0];
    status.textContent = top
      ? tok.getAttribute("data-label") + " — " + top.getAttribute("data-label")
      : tok.getAttribute("data-label");
  }

  function release(svg) {
    svg.classList.remove("lv-isolating");
    svg.querySelectorAll(".lv-on, .lv-active").forEach(function (el) {
      el.classList.remove("lv-on", "lv-active");
    });
  }

  function move(svg, tok, key) {
    const side = tok.classList.contains("lv-q") ? "lv-q" : "lv-k";
    const column = pieces(svg, side);
    const at = column.indexOf(tok);
    let next = null;
    if (key === "ArrowDown") next = column[Math.min(at + 1, column.length - 1)];
    else if (key === "ArrowUp") next = column[Math.max(at - 1, 0)];
    else if (key === "Home") next = column[0];
    else if (key === "End") next = column[column.length - 1];
    else if (key === "ArrowLeft" || key === "ArrowRight") {
      const other = pieces(svg, side === "lv-q" ? "lv-k" : "lv-q");
      next = other[Math.min(at, other.length - 1)];
    }
    if (next) next.focus();
    return next !== null;
  }

  // Delegated from the document, so that a line view swapped in by a live update (the page
  // redraws when heads are ticked) answers at once, with no wiring of its own.
  function tokenOf(event) {
    const tok = event.target instanceof Element ? event.target.closest(".lv-tok") : null;
    const svg = tok ? tok.closest("svg.lineview") : null;
    return svg ? { tok: tok, svg: svg } : null;
  }

  document.addEventListener("mouseover", function (event) {
    const at = tokenOf(event);
    if (at) isolate(at.svg, at.tok);
  });
  document.addEventListener("mouseout", function (event) {
    const at = tokenOf(event);
    if (!at || at.tok.contains(event.relatedTarget)) return; // still inside the piece
    if (document.activeElement !== at.tok) release(at.svg);
  });
  document.addEventListener("focusin", function (event) {
    const at = tokenOf(event);
    if (at) isolate(at.svg, at.tok);
  });
  document.addEventListener("focusout", function (event) {
    const at = tokenOf(event);
    if (at) release(at.svg);
  });
  document.addEventListener("keydown", function (event) {
    const at = tokenOf(event);
    if (!at) return;
    if (event.key === "Escape") {
      release(at.svg);
      at.tok.blur();
      event.preventDefault();
    } else if (move(at.svg, at.tok, event.key)) {
      event.preventDefault();
    }
  });
})();
