// A test extension for the child pi: it steers the running turn once, as a live message
// would, so pi continues after its first stop message. Configured by the environment:
//   STEER_ONCE_AT    `turn_end` (default: once the first turn's answer is in) or
//                    `message_update` (while the first answer is still streaming)
//   STEER_ONCE_TEXT  the message (default `STEER-1`)
export default function steerOnce(pi) {
  const at = process.env.STEER_ONCE_AT || "turn_end";
  const text = process.env.STEER_ONCE_TEXT || "STEER-1";
  let sent = false;
  pi.on(at, () => {
    if (sent) return;
    sent = true;
    pi.sendUserMessage(text, { deliverAs: "steer" });
  });
}
