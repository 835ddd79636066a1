// The head lab, live: every edit asks the server to re-render the results (GET /?…&fragment=1)
// and swaps them in. No attention arithmetic here: this file only collects the form's text,
// joins grid cells into the URL's compact rows, and places the server's HTML.
"use strict";

(function () {
  const form = document.getElementById("lab-form");
  if (!form) return;
  const MATRIX_NAMES = new Set(["x", "w_q", "w_k", "w_v", "cell", "allowed"]);
  const DEBOUNCE_MS = 10; // edits arriving while a request is out are merged into one more
  let inFlight = false;
  let queued = null;
  let timer = null;
  let redraws = 0;

  // ---------------------------------------------------------------- the state as a URL

  function gridRows(grid) {
    return Array.from(grid.querySelectorAll("tbody tr"))
      .map(function (tr) {
        return Array.from(tr.querySelectorAll("input")).map(function (cell) {
          return cell.value.trim();
        }).join(",");
      })
      .join(";");
  }

  function patternRows() {
    return Array.from(form.querySelectorAll("#pattern tbody tr"))
      .map(function (tr) {
        return Array.from(tr.querySelectorAll("input")).map(function (box) {
          return box.checked ? "1" : "0";
        }).join("");
      })
      .join(";");
  }

  function stateParams(action) {
    const params = new URLSearchParams();
    new FormData(form).forEach(function (value, key) {
      if (!MATRIX_NAMES.has(key) && key !== "action") params.append(key, value);
    });
    form.querySelectorAll("[data-matrix]").forEach(function (grid) {
      if (grid.dataset.given === "1") params.append(grid.dataset.matrix, gridRows(grid));
    });
    const mode = form.querySelector("input[name=mask]:checked");
    if (mode && mode.value === "custom" && form.querySelector("#pattern")) {
      params.append("allowed", patternRows());
    }
    if (action) params.append("action", action);
    return params;
  }

  // ---------------------------------------------------------------- swapping the server's HTML

  function swapEditor(fresh) {
    const old = document.getElementById("lab-editor");
    const active = document.activeElement;
    // Keep the control being typed in (its text and caret) instead of the server's copy.
    if (active && active.id && old.contains(active)) {
      const twin = fresh.querySelector("#" + CSS.escape(active.id));
      if (twin && twin.type === active.type) twin.replaceWith(active);
    }
    old.replaceWith(fresh);
  }

  function swapResults(fresh) {
    const old = document.getElementById("lab-results");
    // Reuse the drawn plots so that plotly updates them in place instead of from scratch.
    old.querySelectorAll("[data-figure]").forEach(function (plot) {
      const twin = fresh.querySelector('[data-figure="' + plot.dataset.figure + '"]');
      if (twin) twin.replaceWith(plot);
    });
    old.replaceWith(fresh);
    return fresh;
  }

  function apply(html, structural) {
    const template = document.createElement("template");
    template.innerHTML = html;
    const part = function (id) { return template.content.getElementById(id); };
    const messages = part("lab-messages");
    document.getElementById("lab-messages").replaceWith(messages);
    if (messages.dataset.problems === "1") {
      document.getElementById("lab-results").classList.add("stale");
      return;
    }
    if (structural) swapEditor(part("lab-editor"));
    const results = swapResults(part("lab-results"));
    const query = results.dataset.query;
    history.replaceState(null, "", "/?" + query);
    const jsonLink = document.getElementById("json-link");
    if (jsonLink) jsonLink.href = "/lab.json?" + query;
    window.AttentionLab.drawFigures(results);
    redraws += 1;
    document.documentElement.dataset.labRedraws = String(redraws);
  }

  function send(job) {
    if (inFlight) {
      queued = {
        structural: job.structural || (queued && queued.structural),
        action: job.action || (queued && queued.action),
      };
      return;
    }
    inFlight = true;
    const structural = job.structural || Boolean(job.action);
    const params = stateParams(job.action);
    params.append("fragment", structural ? "all" : "results");
    fetch("/?" + params.toString(), { headers: { Accept: "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) { apply(html, structural); })
      .catch(function () {
        document.getElementById("lab-results").classList.add("stale");
      })
      .finally(function () {
        inFlight = false;
        if (queued) {
          const next = queued;
          queued = null;
          send(next);
        }
      });
  }

  function update(structural, action) {
    clearTimeout(timer);
    timer = setTimeout(function () { send({ structural: structural, action: action }); }, DEBOUNCE_MS);
  }

  // ---------------------------------------------------------------- events

  form.addEventListener("input", function (event) {
    const target = event.target;
    const grid = target.closest("[data-matrix]");
    if (grid) grid.dataset.given = "1";
    if (target.classList.contains("pattern-cell")) {
      const custom = form.querySelector("#mask-custom");
      if (!custom.checked) {
        custom.checked = true;
        update(true);
        return;
      }
    }
    update(target.hasAttribute("data-structural"));
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const button = event.submitter;
    update(true, button && button.name === "action" ? button.value : null);
  });

  // A token button outside the form picks the query: the form's own submit with it.
  document.addEventListener("click", function (event) {
    const pick = event.target.closest("button[data-query]");
    if (!pick) return;
    event.preventDefault();
    form.querySelector("#query").value = pick.dataset.query;
    update(false);
  });

  window.AttentionLab = Object.assign(window.AttentionLab || {}, { labState: stateParams });
})();
