// Heatmaps drawn by the server (app/figures/heatmap). Nothing is drawn or computed here: the cell
// under the pointer, or under the keyboard's cursor, shows its hover text, the server's
// template for that cell filled with the numbers the server wrote once per row, column or cell
// (the figure's <script type="application/json" class="hm-data">, see Tips in
// app/figures/heatmap/model.py), and the downloads save the server's SVG (standalone: its
// data-box as viewBox) or a PNG drawn from it. Every listener is on the document and every
// state is in the markup, so a figure swapped in by a live update works at once.
"use strict";

(function () {
  document.documentElement.classList.add("hm-js"); // offers the downloads (heatmap.css)

  const KEYS = {
    ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
  };

  function cells(svg) {
    return svg.querySelector(".hm-cells").children;
  }

  // The cell at row i, column j (clamped to the grid), and where the cursor is now.
  function cellAt(svg, i, j) {
    const rows = +svg.dataset.rows;
    const cols = +svg.dataset.cols;
    i = Math.max(0, Math.min(rows - 1, i));
    j = Math.max(0, Math.min(cols - 1, j));
    return { i: i, j: j, cell: cells(svg)[i * cols + j] };
  }

  // The figure's hover data, parsed once per script element (a live swap brings a new one).
  const parsed = new WeakMap();
  const PLACE = /\{(v|[rc]\d*|x\d+)\}/g;

  function tipText(svg, i, j) {
    const script = svg.closest(".hm").querySelector("script.hm-data");
    if (!parsed.has(script)) parsed.set(script, JSON.parse(script.textContent));
    const data = parsed.get(script);
    const k = i * data.c.length + j;
    const template = data.t[data.k ? +data.k[k] : 0];
    return template.replace(PLACE, function (_, name) {
      if (name === "v") return data.v[k];
      const at = +name.slice(1);
      if (name[0] === "r") return data.r[i][at];
      if (name[0] === "c") return data.c[j][at];
      return data.x[at][k];
    });
  }

  function current(svg) {
    const at = (svg.dataset.at || (svg.dataset.start || "0") + ",0").split(",");
    return cellAt(svg, +at[0], +at[1]);
  }

  function show(svg, spot) {
    svg.dataset.at = spot.i + "," + spot.j;
    const cursor = svg.querySelector(".hm-cursor");
    cursor.setAttribute("transform", "translate(" + spot.cell.getAttribute("x") + " " +
      spot.cell.getAttribute("y") + ")");
    cursor.setAttribute("visibility", "visible");
    const figure = svg.closest(".hm");
    const tip = figure.querySelector(".hm-tip");
    tip.textContent = tipText(svg, spot.i, spot.j);
    // Below the cell, or above it in the lower half; kept within the figure's width.
    const box = figure.getBoundingClientRect();
    const at = spot.cell.getBoundingClientRect();
    const plot = svg.getBoundingClientRect();
    const below = at.top + at.height / 2 < plot.top + plot.height / 2;
    const left = Math.min(at.left - box.left, box.width - tip.offsetWidth);
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = (below ? at.bottom - box.top + 6 : at.top - box.top - tip.offsetHeight - 6) + "px";
  }

  function hide(svg) {
    const cursor = svg.querySelector(".hm-cursor");
    if (cursor) cursor.setAttribute("visibility", "hidden");
    const tip = svg.closest(".hm").querySelector(".hm-tip");
    if (tip) tip.textContent = "";
  }

  function grid(target) {
    return target instanceof Element ? target.closest(".hm-svg[data-cols]") : null;
  }

  document.addEventListener("pointerover", function (event) {
    const svg = grid(event.target);
    const cell = event.target.closest && event.target.closest(".hm-cells > rect");
    if (!svg || !cell) return;
    const k = Array.prototype.indexOf.call(cells(svg), cell);
    const cols = +svg.dataset.cols;
    show(svg, { i: Math.floor(k / cols), j: k % cols, cell: cell });
  });

  document.addEventListener("pointerout", function (event) {
    const svg = grid(event.target);
    if (svg && !svg.contains(event.relatedTarget) && document.activeElement !== svg) hide(svg);
  });

  document.addEventListener("focusin", function (event) {
    const svg = grid(event.target);
    if (svg && event.target === svg) show(svg, current(svg));
  });

  document.addEventListener("focusout", function (event) {
    const svg = grid(event.target);
    if (svg && event.target === svg) hide(svg);
  });

  document.addEventListener("keydown", function (event) {
    const svg = grid(event.target);
    if (!svg || event.target !== svg || event.altKey || event.ctrlKey || event.metaKey) return;
    const here = current(svg);
    let next = null;
    if (KEYS[event.key]) next = cellAt(svg, here.i + KEYS[event.key][0], here.j + KEYS[event.key][1]);
    else if (event.key === "Home") next = cellAt(svg, here.i, 0);
    else if (event.key === "End") next = cellAt(svg, here.i, +svg.dataset.cols - 1);
    else if (event.key === "Escape") hide(svg);
    if (!next) return;
    event.preventDefault();
    show(svg, next);
  });

  // ---------------------------------------------------------------- downloads

  // A copy of one of the figure's SVGs as the standalone document shows it: its data-box
  // as the view (the title above the page's view comes into sight), placed at data-place
  // inside a group's frame, without the page's state (cursor, sizes, focus).
  function standaloneCopy(svg, placed) {
    const copy = svg.cloneNode(true);
    const box = svg.dataset.box.split(" ");
    copy.setAttribute("viewBox", svg.dataset.box);
    copy.setAttribute("width", box[2]);
    copy.setAttribute("height", box[3]);
    ["style", "tabindex", "aria-hidden", "data-at"].forEach(function (name) { copy.removeAttribute(name); });
    if (placed) {
      const place = svg.dataset.place.split(" ");
      copy.setAttribute("x", place[0]);
      copy.setAttribute("y", place[1]);
    }
    const cursor = copy.querySelector(".hm-cursor");
    if (cursor) cursor.remove();
    return copy;
  }

  function standaloneSvg(figure) {
    let root;
    if (figure.classList.contains("hm-group")) {
      root = standaloneCopy(figure.querySelector(".hm-frame"), false);
      figure.querySelectorAll("svg[data-place]").forEach(function (svg) {
        root.appendChild(standaloneCopy(svg, true));
      });
    } else {
      root = standaloneCopy(figure.querySelector(".hm-svg"), false);
    }
    return { text: new XMLSerializer().serializeToString(root),
      width: +root.getAttribute("width"), height: +root.getAttribute("height") };
  }

  function save(blob, name) {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    window.setTimeout(function () { URL.revokeObjectURL(link.href); }, 60000);
  }

  // The standalone SVG drawn into a canvas at twice its size (sharp on slides), as PNG.
  function png(svg, done) {
    const url = URL.createObjectURL(new Blob([svg.text], { type: "image/svg+xml" }));
    const image = new Image();
    image.onload = function () {
      const canvas = document.createElement("canvas");
      canvas.width = Math.ceil(svg.width * 2);
      canvas.height = Math.ceil(svg.height * 2);
      const context = canvas.getContext("2d");
      context.scale(2, 2);
      context.drawImage(image, 0, 0, svg.width, svg.height);
      URL.revokeObjectURL(url);
      canvas.toBlob(done, "image/png");
    };
    image.src = url;
  }

  document.addEventListener("click", function (event) {
    const button = event.target instanceof Element && event.target.closest("[data-hm-download]");
    if (!button) return;
    const figure = button.closest(".hm-group, .hm");
    const svg = standaloneSvg(figure);
    const name = figure.dataset.file;
    if (button.dataset.hmDownload === "svg") {
      save(new Blob([svg.text], { type: "image/svg+xml" }), name + ".svg");
    } else {
      png(svg, function (blob) { save(blob, name + ".png"); });
    }
  });
})();
