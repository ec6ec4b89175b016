// The replay player: it types out the session the transcript holds in a
// terminal frame, on the cast's own clock (every note, command and output
// line carries the moment the cast shows it), so a moment on the page is the
// same moment in the .cast file. It reads the session from the transcript's
// own markup, so what it plays and what the page prints are one thing; with
// JavaScript off the transcript is all there is.
//
// Controls: play/pause, restart, previous/next step, speed (remembered), a
// step list labelled with each step's note, a scrubber, back to the
// transcript, and keys while focus is in the player (Space, arrows, Home and
// End, "," and ".", "?"). Deep links: #step-4 opens at step 4, #t=12.5 at
// that second; a claim in "What was checked" opens the moment it was checked.
(function () {
  "use strict";
  var frame = document.querySelector("figure.replay");
  if (!frame) {
    return;
  }
  function $(selector) { return frame.querySelector(selector); }
  var controls = $(".controls");
  var seekBar = $(".seek");
  var keysHelp = $(".keys-help");
  var playButton = $("button.play");
  var restartButton = $("button.restart");
  var prevButton = $("button.prev");
  var nextButton = $("button.next");
  var speedSelect = $("select.speed");
  var chapterSelect = $("select.chapters");
  var keysButton = $("button.keys");
  var transcriptButton = $("button.show-transcript");
  var scrubber = $("input.scrubber");
  var timeShown = $(".time");
  var phase = $(".phase");
  var progress = $(".progress");
  var transcript = $(".transcript");
  var duration = parseFloat(frame.dataset.duration) || 0;
  var speedKey = "ptah.replay.speed";

  function seconds(el, name) {
    var v = parseFloat(el.dataset[name]);
    return isFinite(v) ? v : 0;
  }

  // The session as pieces in the order (and at the moments) the cast shows
  // them: a step's note, its command (typed between two moments), its lines.
  var steps = [];
  var pieces = [];
  Array.prototype.forEach.call(transcript.querySelectorAll(".step"), function (el, i) {
    var step = {
      number: parseInt(el.dataset.step, 10),
      sync: el.dataset.sync || "",
      note: el.querySelector(".note").textContent,
      t: seconds(el, "t")
    };
    steps.push(step);
    var note = document.createElement("span");
    note.className = "note";
    note.textContent = (i > 0 ? "\n" : "") + step.note + "\n";
    pieces.push({ t: step.t, node: note });
    var command = document.createElement("span");
    command.className = "command";
    pieces.push({ t: seconds(el, "typed"), end: seconds(el, "ran"), node: command,
      text: Array.from(el.querySelector(".command").textContent + "\n") });
    Array.prototype.forEach.call(el.querySelectorAll(".output .line"), function (line) {
      var node = line.cloneNode(true);
      node.appendChild(document.createTextNode("\n"));
      pieces.push({ t: seconds(line, "t"), node: node });
    });
  });

  var terminal = document.createElement("pre");
  terminal.className = "terminal";
  terminal.tabIndex = 0; // it scrolls, so a keyboard must reach it
  terminal.setAttribute("aria-label", "Terminal");
  terminal.hidden = true;
  frame.appendChild(terminal);

  var now = 0;       // seconds on the cast's clock
  var shown = 0;     // pieces appended to the terminal
  var shownAt = 0;   // the time the terminal was drawn for
  var typing = null; // the command being typed, if any
  var speed = 1;
  var timer = 0;
  var last = 0;

  // draw makes the terminal show the session at time t: going forward it
  // adds what came since, going back it starts over.
  function draw(t) {
    if (t < shownAt) {
      terminal.textContent = "";
      shown = 0;
      typing = null;
    }
    shownAt = t;
    while (shown < pieces.length && pieces[shown].t <= t) {
      var p = pieces[shown++];
      if (p.text) {
        if (typing) {
          typing.node.textContent = typing.text.join("");
        }
        typing = p;
      }
      terminal.appendChild(p.node);
    }
    if (typing) {
      var span = typing.end - typing.t;
      var n = span > 0 ? Math.floor((t - typing.t) / span * typing.text.length) : typing.text.length;
      n = Math.max(0, Math.min(typing.text.length, n));
      typing.node.textContent = typing.text.slice(0, n).join("");
      if (n >= typing.text.length) {
        typing = null;
      }
    }
    terminal.scrollTop = terminal.scrollHeight;
  }

  function clock(t) {
    var m = Math.floor(t / 60);
    var s = (t - m * 60).toFixed(1);
    return m + ":" + (s.length < 4 ? "0" : "") + s;
  }

  function stepAt(t) {
    var i = 0;
    while (i + 1 < steps.length && steps[i + 1].t <= t) {
      i++;
    }
    return i;
  }

  function state(s) {
    frame.dataset.state = s;
    playButton.textContent = s === "playing" ? "Pause" : s === "done" ? "Play again" : "Play";
  }

  // update shows time now everywhere: terminal, scrubber, step, phase.
  function update() {
    draw(now);
    var i = stepAt(now);
    var step = steps[i];
    frame.dataset.time = now.toFixed(3);
    frame.dataset.step = String(step.number);
    scrubber.value = String(now);
    var where = clock(now) + " of " + clock(duration);
    scrubber.setAttribute("aria-valuetext", where + ", step " + step.number + ": " + step.note);
    timeShown.textContent = clock(now) + " / " + clock(duration);
    if (chapterSelect.value !== String(step.number)) {
      chapterSelect.value = String(step.number);
    }
    var text = "step " + step.number + " of " + steps.length;
    if (progress.textContent.indexOf(text) !== 0) {
      progress.textContent = text;
    }
    phase.hidden = step.sync === "";
    phase.textContent = step.sync;
    phase.dataset.phase = step.sync;
  }

  function showTerminal() {
    if (terminal.hidden) {
      transcript.hidden = true;
      terminal.hidden = false;
    }
  }

  function tick() {
    var at = performance.now();
    now = Math.min(duration, now + (at - last) / 1000 * speed);
    last = at;
    update();
    if (now >= duration) {
      stop("done");
      return;
    }
    timer = setTimeout(tick, 16);
  }

  function play() {
    if (frame.dataset.state === "done" || now >= duration) {
      now = 0;
    }
    showTerminal();
    state("playing");
    last = performance.now();
    clearTimeout(timer);
    tick();
  }

  function stop(s) {
    clearTimeout(timer);
    timer = 0;
    state(s);
  }

  // seek moves to t and keeps playing if it was; at the end it is done.
  function seek(t) {
    now = Math.max(0, Math.min(duration, t));
    showTerminal();
    last = performance.now();
    var wasPlaying = frame.dataset.state === "playing";
    update();
    if (now >= duration) {
      stop("done");
    } else if (!wasPlaying) {
      state("paused");
    }
  }

  function toggle() {
    if (frame.dataset.state === "playing") {
      stop("paused");
    } else {
      play();
    }
  }

  // The next step starts after now; the previous one is the current step's
  // start when more than a second into it, else the step before.
  function nextStep() {
    for (var i = 0; i < steps.length; i++) {
      if (steps[i].t > now + 0.0005) {
        seek(steps[i].t);
        return;
      }
    }
    seek(duration);
  }
  function prevStep() {
    var i = stepAt(now);
    if (now - steps[i].t <= 1 && i > 0) {
      i--;
    }
    seek(steps[i].t);
  }

  function toggleKeys() {
    keysHelp.hidden = !keysHelp.hidden;
    keysButton.setAttribute("aria-expanded", String(!keysHelp.hidden));
  }

  // A deep link: #step-N or #t=SECONDS. It returns whether it was one.
  function follow(hash, focus) {
    var m = /^#step-(\d+)$/.exec(hash);
    var t = null;
    if (m) {
      for (var i = 0; i < steps.length; i++) {
        if (steps[i].number === parseInt(m[1], 10)) {
          t = steps[i].t;
        }
      }
    } else if ((m = /^#t=(\d+(?:\.\d+)?)$/.exec(hash))) {
      t = parseFloat(m[1]);
    }
    if (t === null) {
      return false;
    }
    if (frame.dataset.state === "playing") {
      stop("paused");
    }
    seek(t);
    if (focus) {
      frame.focus({ preventScroll: true });
      frame.scrollIntoView({ block: "nearest" });
    }
    return true;
  }

  playButton.addEventListener("click", toggle);
  restartButton.addEventListener("click", function () { now = 0; play(); });
  prevButton.addEventListener("click", prevStep);
  nextButton.addEventListener("click", nextStep);
  keysButton.addEventListener("click", toggleKeys);
  // Back to the page's own transcript, whole and selectable; Play goes on
  // from where the player was.
  transcriptButton.addEventListener("click", function () {
    stop("ready");
    terminal.hidden = true;
    transcript.hidden = false;
    phase.hidden = true;
  });
  scrubber.addEventListener("input", function () { seek(parseFloat(scrubber.value)); });
  chapterSelect.addEventListener("change", function () { follow("#step-" + chapterSelect.value, false); });
  speedSelect.addEventListener("change", function () {
    speed = parseFloat(speedSelect.value) || 1;
    try {
      window.localStorage.setItem(speedKey, speedSelect.value);
    } catch (e) {
      // Storage refused (private mode): the speed holds for this page only.
    }
  });

  frame.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) {
      return;
    }
    var tag = e.target.tagName;
    if (tag === "SELECT") {
      return; // its own keys choose an option
    }
    var key = e.key;
    if (key === " " && (tag === "BUTTON" || tag === "A" || tag === "SUMMARY")) {
      return; // Space presses the focused control
    }
    switch (key) {
    case " ":
      toggle();
      break;
    case "ArrowLeft":
      seek(now - 5);
      break;
    case "ArrowRight":
      seek(now + 5);
      break;
    case "Home":
      seek(0);
      break;
    case "End":
      seek(duration);
      break;
    case ",":
      prevStep();
      break;
    case ".":
      nextStep();
      break;
    case "?":
      toggleKeys();
      break;
    default:
      return;
    }
    e.preventDefault();
  });

  // A claim links to the moment it was checked.
  Array.prototype.forEach.call(document.querySelectorAll("a.moment[data-t]"), function (a) {
    a.href = "#t=" + a.dataset.t;
    a.addEventListener("click", function (e) {
      e.preventDefault();
      history.pushState(null, "", a.getAttribute("href"));
      follow(a.getAttribute("href"), true);
      progress.textContent = "step " + frame.dataset.step + " of " + steps.length + ", checked here: " + a.textContent;
    });
  });
  window.addEventListener("hashchange", function () { follow(location.hash, true); });
  window.addEventListener("popstate", function () { follow(location.hash, true); });

  try {
    var saved = window.localStorage.getItem(speedKey);
    if (saved && speedSelect.querySelector('option[value="' + CSS.escape(saved) + '"]')) {
      speedSelect.value = saved;
    }
  } catch (e) {
    // No storage: the default speed.
  }
  speed = parseFloat(speedSelect.value) || 1;
  controls.hidden = false;
  seekBar.hidden = false;
  state("ready");
  // A deep link opens the player at once; focus moves to it once the page
  // has loaded, after the browser's own move to the fragment.
  if (follow(location.hash, false)) {
    window.addEventListener("load", function () {
      frame.focus({ preventScroll: true });
      frame.scrollIntoView({ block: "nearest" });
    });
  }
})();
