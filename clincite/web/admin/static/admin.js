/*
 * ClinCite admin pages: upload with progress, the live ingest queue, confirmations. No framework, no inline script
 * (the pages' Content-Security-Policy allows only this file). Without it every form still works as a plain post.
 */
(function () {
  "use strict";

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  function sizeText(bytes) {
    return bytes >= 1048576 ? (bytes / 1048576).toFixed(1) + " MB" : Math.max(1, Math.round(bytes / 1024)) + " KB";
  }

  // --- confirmations ---
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
    }
  }, true);

  // --- the chosen files, drag and drop ---
  function showChosen(input) {
    var list = document.getElementById("chosen");
    if (!list || input.id !== "upload-input") {
      return;
    }
    list.textContent = "";
    Array.prototype.forEach.call(input.files, function (file) {
      var item = document.createElement("li");
      item.textContent = file.name + "（" + sizeText(file.size) + "）";
      list.appendChild(item);
    });
  }

  document.addEventListener("change", function (event) {
    var input = event.target;
    if (input.type !== "file") {
      return;
    }
    showChosen(input);
    if (input.hasAttribute("data-autosubmit") && input.files.length) {
      input.form.requestSubmit();
    }
  });

  var zone = document.getElementById("drop-zone");
  if (zone) {
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) {
        event.preventDefault();
        zone.classList.add("over");
      });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function () {
        zone.classList.remove("over");
      });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      var input = document.getElementById("upload-input");
      input.files = event.dataTransfer.files;
      showChosen(input);
    });
  }

  // --- upload with progress ---
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || !form.hasAttribute("data-upload")) {
      return;
    }
    event.preventDefault();
    var status = document.getElementById("upload-status");
    var bar = document.getElementById("upload-bar");
    var data = new FormData(form);
    if (!data.getAll("files").some(function (f) { return f && f.name; })) {
      status.textContent = "请先选择文件。";
      return;
    }
    var request = new XMLHttpRequest();
    request.open("POST", form.getAttribute("action"));
    request.setRequestHeader("X-CSRF-Token", csrf());
    request.setRequestHeader("Accept", "application/json");
    bar.hidden = false;
    bar.value = 0;
    status.textContent = "正在上传…";
    request.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) {
        var share = Math.round((e.loaded / e.total) * 100);
        bar.value = share;
        status.textContent = "正在上传：" + share + "%（" + sizeText(e.loaded) + " / " + sizeText(e.total) + "）";
      }
    });
    request.addEventListener("load", function () {
      var answer = {};
      try {
        answer = JSON.parse(request.responseText);
      } catch (ignored) {
        answer = { error: "服务器返回了无法识别的内容（" + request.status + "）" };
      }
      bar.hidden = true;
      if (answer.error) {
        status.textContent = "上传失败：" + answer.error;
      } else {
        var parts = [];
        if (answer.accepted && answer.accepted.length) {
          active[answer.job] = true;  // reload the page once it is done (the documents list changes)
          parts.push("已接收 " + answer.accepted.length + " 个文件，" +
            (answer.position > 1 ? "排队中（前面还有 " + (answer.position - 1) + " 批）" : "开始导入"));
        }
        (answer.refused || []).forEach(function (r) {
          parts.push("未接收 " + r.name + "：" + r.reason);
        });
        status.textContent = parts.join("；");
        form.reset();
        showChosen(document.getElementById("upload-input") || form);
      }
      poll(true);
    });
    request.addEventListener("error", function () {
      bar.hidden = true;
      status.textContent = "上传失败：网络中断，请重试。";
    });
    request.send(data);
  });

  // --- the live queue ---
  var queue = document.getElementById("queue");
  var active = {};
  var timer = null;

  function activeJobs() {
    var found = {};
    queue.querySelectorAll("[data-job]").forEach(function (job) {
      var state = job.getAttribute("data-state");
      if (state === "queued" || state === "running") {
        found[job.getAttribute("data-job")] = true;
      }
    });
    return found;
  }

  function poll(soon) {
    if (!queue) {
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(function () {
      fetch(queue.getAttribute("data-poll"), { credentials: "same-origin", cache: "no-store" })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (html) {
          queue.innerHTML = html;
          var now = activeJobs();
          var finished = Object.keys(active).some(function (id) { return !now[id]; });
          active = now;
          if (finished) {
            window.location.reload();  // the documents list has changed
            return;
          }
          poll(false);
        })
        .catch(function () { poll(false); });
    }, soon ? 200 : (Object.keys(active).length ? 1000 : 5000));
  }

  if (queue) {
    active = activeJobs();
    poll(false);
  }
})();
