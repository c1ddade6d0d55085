/*
 * ClinCite: the source panel opens only when a clinician clicks a citation 【n】.
 *
 * Chainlit 2.11+ opens its side panel by itself whenever side elements arrive (after every answer, and when a
 * thread is reopened), listing every passage of the thread under the last one's label. A click on 【n】 shows
 * exactly that citation's passage. So: a panel that appears (or changes) without a recent click on a citation
 * link, or that lists more than one passage, is closed again at once.
 */
(function () {
  "use strict";
  var CLICK_WINDOW_MS = 1500;
  var lastCitationClick = 0;
  var lastState = null;

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target && target.closest && target.closest("a.element-link")) {
      lastCitationClick = Date.now();
    }
  }, true);

  function closePanel(title) {
    var back = title.querySelector("button");  // desktop: the panel's back arrow
    if (back) {
      back.click();
      return;
    }
    // phone: the panel is a sheet (a dialog) that closes on Escape
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", code: "Escape", bubbles: true }));
  }

  function check() {
    var title = document.getElementById("side-view-title");
    var content = document.getElementById("side-view-content");
    if (!title || !content) {
      lastState = null;
      return;
    }
    var passages = content.children.length;
    var state = title.textContent + "|" + passages;
    if (state === lastState) {
      return;
    }
    lastState = state;
    var clicked = Date.now() - lastCitationClick < CLICK_WINDOW_MS;
    if (passages > 1 || !clicked) {
      lastState = null;
      closePanel(title);
    }
  }

  new MutationObserver(check).observe(document.documentElement, { childList: true, subtree: true });
})();

/*
 * ClinCite: the chat's small extras.
 * - Admins (and only admins: the server says who is one, /clincite/me) get a "管理" link in the header.
 * - Strings Chainlit's front end hard-codes in English (no translation key) are shown in Chinese.
 * - The copy button of a report copies clean text for a medical record or a message: TL;DR, the conclusion and the
 *   numbered evidence with 《source》 and the quote; no Markdown marks, no footer (checks, timings).
 */
(function () {
  "use strict";

  // --- the admin link ---
  var header = null;
  var admin = false;

  function placeAdminLink() {
    var readme = document.getElementById("readme-button");
    var link = document.getElementById("clincite-admin-link");
    if (!readme) {
      return;
    }
    if (readme !== header) {  // a new header (first load, or after logging in as someone else): ask again
      header = readme;
      admin = false;
      fetch("/clincite/me", { credentials: "same-origin", cache: "no-store" })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (me) {
          admin = !!(me && me.admin);
          placeAdminLink();
        })
        .catch(function () {});
    }
    if (admin && !link) {
      link = document.createElement("a");
      link.id = "clincite-admin-link";
      link.href = "/admin/library";
      link.textContent = "管理";
      link.title = "知识库、用户、审阅台与指标（仅管理员）";
      link.className = readme.className;
      readme.parentNode.insertBefore(link, readme);
    } else if (!admin && link) {
      link.remove();
    }
  }

  // --- hard-coded English ---
  var ENGLISH = [
    [/^Couldn't resume chat(: .*)?$/, "无法打开这个对话：它不属于当前账号，或已被删除。"],
    [/^Failed to copy: .*$/, "复制失败，请手动选择文字复制。"],
    [/^Unauthorized(: .*)?$/, "用户名或密码不正确，或登录已失效，请重新登录。"],
    [/^Error fetching threads: .*$/, "读取对话列表失败，请刷新页面重试。"],
    [/^Failed to load thread: .*$/, "无法载入这个对话：它不属于当前账号，或已被删除。"],
    [/^Task manually stopped\.$/, "已停止生成。"]
  ];

  function translate(node) {
    var walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    var text;
    while ((text = walker.nextNode())) {
      var value = text.nodeValue.trim();
      if (!value || value.length > 200) {
        continue;
      }
      for (var i = 0; i < ENGLISH.length; i++) {
        if (ENGLISH[i][0].test(value)) {
          text.nodeValue = ENGLISH[i][1];
          break;
        }
      }
    }
  }

  // --- clean copies of a report ---
  var cleanCopy = null;
  var cleanCopyAt = 0;
  var COPY_WINDOW_MS = 2000;

  function plain(element) {
    return (element.innerText || element.textContent || "").replace(/\u2060/g, "").replace(/[ \t]+\n/g, "\n").trim();
  }

  var BLOCKS = /^(H[1-6]|UL|OL|P|DIV|BLOCKQUOTE|TABLE|HR|PRE|SECTION)$/;

  function hasBlocks(element) {
    return Array.prototype.some.call(element.children, function (child) { return BLOCKS.test(child.tagName); });
  }

  function reportText(content) {
    var lines = [];
    var done = false;
    function walk(parent) {
      Array.prototype.forEach.call(parent.children, function (element) {
        if (done) {
          return;
        }
        var tag = element.tagName;
        if (tag === "HR" || (element.getAttribute("role") === "none" && !plain(element))) {
          // the rule before the footer (Chainlit draws it as an empty separator): checks, coverage, timings follow
          done = true;
        } else if (tag === "BLOCKQUOTE") {
          // the mode notice at the top of an offline report: not part of the clinical content
        } else if (/^H[1-6]$/.test(tag)) {
          lines.push("", plain(element));
        } else if (tag === "UL" || tag === "OL") {
          Array.prototype.forEach.call(element.children, function (item, index) {
            lines.push((tag === "OL" ? (index + 1) + ". " : "- ") + plain(item));
          });
        } else if (tag !== "TABLE" && hasBlocks(element)) {
          walk(element);
        } else {
          lines.push(plain(element));  // a paragraph (Chainlit renders them as <p> or <div>), a table, code
        }
      });
    }
    walk(content);
    return lines.join("\n").replace(/\n{3,}/g, "\n\n").trim() + "\n";
  }

  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest && event.target.closest("button");
    if (!button || !button.querySelector("svg.lucide-copy")) {
      return;
    }
    var step = button.closest(".step");
    var content = step && step.querySelector(".message-content");
    if (content && /论据与来源/.test(content.textContent)) {
      cleanCopy = reportText(content);
      cleanCopyAt = Date.now();
    }
  }, true);

  function pendingCopy() {
    if (cleanCopy !== null && Date.now() - cleanCopyAt < COPY_WINDOW_MS) {
      var text = cleanCopy;
      cleanCopy = null;
      return text;
    }
    return null;
  }

  if (navigator.clipboard) {
    var write = navigator.clipboard.write && navigator.clipboard.write.bind(navigator.clipboard);
    var writeText = navigator.clipboard.writeText.bind(navigator.clipboard);
    navigator.clipboard.writeText = function (text) {
      var clean = pendingCopy();
      return writeText(clean !== null ? clean : text);
    };
    if (write) {
      navigator.clipboard.write = function (items) {
        var clean = pendingCopy();
        return clean !== null ? writeText(clean) : write(items);
      };
    }
  }

  new MutationObserver(function (mutations) {
    placeAdminLink();
    mutations.forEach(function (mutation) {
      mutation.addedNodes.forEach(function (node) {
        if (node.nodeType === 1) {
          translate(node);
        } else if (node.nodeType === 3 && node.parentNode) {
          translate(node.parentNode);
        }
      });
    });
  }).observe(document.documentElement, { childList: true, subtree: true });
})();

/*
 * ClinCite: what the server refuses is stopped here first, with the reason in Chinese.
 *
 * - A question longer than the server accepts (QUESTION_MAX_CHARS, read from /clincite/limits) is not sent: it
 *   stays in the box and a notice says how long it may be. (The server refuses it too, in the chat; this spares the
 *   upload, and a paste of a whole record cannot get near the socket's message limit.)
 * - A logout the server could not write to disk still ended the session; the login page says so once (the notice
 *   cookie set by the logout answer).
 */
(function () {
  "use strict";
  var questionMax = 2000;
  fetch("/clincite/limits", { credentials: "include" })
    .then(function (r) { return r.ok ? r.json() : null; })
    .then(function (limits) { if (limits && limits.question_max_chars) { questionMax = limits.question_max_chars; } })
    .catch(function () {});

  function banner(text) {
    var box = document.getElementById("clincite-notice");
    if (!box) {
      box = document.createElement("div");
      box.id = "clincite-notice";
      box.setAttribute("role", "alert");
      box.style.cssText = "position:fixed;left:50%;top:16px;transform:translateX(-50%);z-index:10000;" +
        "max-width:90vw;padding:10px 16px;border-radius:8px;background:#fef3c7;color:#78350f;" +
        "box-shadow:0 2px 8px rgba(0,0,0,.15);font-size:14px;line-height:1.6;cursor:pointer";
      box.addEventListener("click", function () { box.remove(); });
      document.body.appendChild(box);
    }
    box.textContent = text;  // text, never markup
  }

  function tooLong() {
    var box = document.getElementById("chat-input");
    var length = box ? Array.from(box.value || "").length : 0;
    if (length <= questionMax) {
      return false;
    }
    banner("问题太长（" + length + " 字），请控制在 " + questionMax + " 字以内：只保留要问的内容，病历等长文请摘取要点后再问。（点击关闭）");
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.target && event.target.id === "chat-input" && tooLong()) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
  document.addEventListener("click", function (event) {
    if (event.target && event.target.closest && event.target.closest("#chat-submit") && tooLong()) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  function showLogoutNotice() {
    if (document.cookie.split("; ").indexOf("clincite_notice=logout_not_saved") < 0) {
      return;
    }
    document.cookie = "clincite_notice=; Max-Age=0; path=/; SameSite=Strict";
    banner("已退出登录，本机上的登录凭证已失效；但服务器未能把这次退出写入账号文件（可能磁盘已满），服务器会持续重试。请告知管理员。（点击关闭）");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", showLogoutNotice);
  } else {
    showLogoutNotice();
  }
  setInterval(showLogoutNotice, 1000);  // the single-page app reaches its login page without loading a new one
})();
