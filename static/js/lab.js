// The head lab, live (static/js/live.js does the fetching and swapping): every edit asks the
// server to re-render the results (GET /?…&fragment=…). No attention arithmetic here: this
// file only joins grid cells into the URL's compact rows and says which parts to take.
"use strict";

(function () {
  const form = document.getElementById("lab-form");
  if (!form || !window.AttentionLab || !window.AttentionLab.live) return;
  const MATRIX_NAMES = new Set(["x", "w_q", "w_k", "w_v", "cell", "allowed"]);

  function rows(grid, read, between) {
    return Array.from(grid.querySelectorAll("tbody tr"))
      .map(function (tr) { return Array.from(tr.querySelectorAll("input")).map(read).join(between); })
      .join(";");
  }

  function stateParams(f, submitter, job) {
    const params = new URLSearchParams();
    new FormData(f).forEach(function (value, key) {
      if (!MATRIX_NAMES.has(key) && key !== "action") params.append(key, value);
    });
    // Every grid the form shows is sent: what is on screen is what is computed (a grid left
    // out would be generated again). The server keeps them through size changes.
    f.querySelectorAll("[data-matrix]").forEach(function (grid) {
      params.append(grid.dataset.matrix, rows(grid, function (c) { return c.value.trim(); }, ","));
    });
    const mode = f.querySelector("input[name=mask]:checked");
    const pattern = f.querySelector("#pattern");
    if (mode && mode.value === "custom" && pattern) {
      params.append("allowed", rows(pattern, function (b) { return b.checked ? "1" : "0"; }, ""));
    }
    const action = job && job.submitter && job.submitter.name === "action" ? job.submitter.value : null;
    if (action) params.append("action", action);
    params.append("fragment", structural(job) ? "all" : "results");
    return params;
  }

  function structural(job) {
    if (!job) return false;
    if (job.submitter) return true; // a button: Generate, Randomize, Identity, Update
    return Boolean(job.target && job.target.hasAttribute && job.target.hasAttribute("data-structural"));
  }

  const lab = window.AttentionLab.live({
    form: "lab-form",
    params: stateParams,
    merge: function (older, newer) {
      return structural(older) && !structural(newer) ? Object.assign({}, newer, {
        target: older.target, submitter: older.submitter || newer.submitter,
      }) : newer;
    },
    url: function (params) { return "/?" + params.toString(); },
    regions: function (doc, job) {
      const messages = doc.getElementById("lab-messages");
      if (messages && messages.dataset.problems === "1") {
        document.getElementById("lab-results").classList.add("stale");
        return ["lab-messages"]; // keep the last good results, greyed, under the sentences
      }
      return structural(job) ? ["lab-messages", "lab-editor", "lab-results"] : ["lab-messages", "lab-results"];
    },
    done: function (doc) {
      const json = document.getElementById("json-link");
      if (json && doc.pageState) json.href = "/lab.json?" + doc.pageState;
    },
  });

  form.addEventListener("change", function (event) {
    if (event.target.classList.contains("pattern-cell")) {
      const custom = form.querySelector("#mask-custom");
      if (custom && !custom.checked) {
        custom.checked = true;
        custom.dispatchEvent(new Event("change", { bubbles: true }));
      }
    }
  }, true); // before live.js reads the form

  // A token button outside the form picks the query.
  document.addEventListener("click", function (event) {
    const pick = event.target.closest("button[data-query]");
    if (!pick) return;
    event.preventDefault();
    document.getElementById("query").value = pick.dataset.query;
    lab.update({ now: true });
  });

  window.AttentionLab.labState = function () { return stateParams(document.getElementById("lab-form")); };
})();
