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
