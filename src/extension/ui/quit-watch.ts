/**
 * Interactive pi stops its terminal UI before it tells extensions that the session ends, so
 * the last frame on screen is the one drawn before the person pressed the exit key. To make
 * that frame say the agents are being stopped (not still running), the keys that quit are
 * watched as they are typed: the exit key on an empty editor (ctrl+d), the clear key twice
 * within half a second (ctrl+c ctrl+c) and `/quit` submitted. The keys are read from pi's own
 * keybindings, with the defaults as a fallback. Nothing is consumed: pi quits as usual.
 */
import { getKeybindings, matchesKey } from "@mariozechner/pi-tui";
import { type Clock, systemClock } from "../../lib/clock.js";

/** pi quits on a second clear key within this long (its own rule). */
const DOUBLE_CLEAR_MS = 500;

export interface QuitWatchUi {
  onTerminalInput(handler: (data: string) => { consume?: boolean; data?: string } | undefined): () => void;
  getEditorText(): string;
}

function pressed(data: string, binding: string, fallback: string): boolean {
  try {
    if (getKeybindings().matches(data, binding as never)) return true;
  } catch {
    // keybindings not set up in this process: the default key decides
  }
  return matchesKey(data, fallback as never);
}

/** Calls `onQuit` when the person presses what makes pi quit; returns the unsubscribe. */
export function watchForQuit(ui: QuitWatchUi, onQuit: () => void, clock: Pick<Clock, "now"> = systemClock): () => void {
  let lastClear = Number.NEGATIVE_INFINITY;
  return ui.onTerminalInput((data) => {
    try {
      const editor = ui.getEditorText();
      if (pressed(data, "app.exit", "ctrl+d") && editor === "") onQuit();
      else if (pressed(data, "app.clear", "ctrl+c")) {
        if (clock.now() - lastClear < DOUBLE_CLEAR_MS) onQuit();
        lastClear = clock.now();
      } else if (pressed(data, "tui.input.submit", "enter") && editor.trim() === "/quit") onQuit();
    } catch {
      // a watcher never gets in the way of typing
    }
    return undefined;
  });
}
