/**
 * The files one run writes as it goes: events.jsonl, the raw stdout and stderr logs (capped)
 * and the readable transcript. They open together, without blocking (artifacts.ts); a file
 * that cannot be written is an error line for result.json, never the end of the run.
 */
import type { EventRecordBody } from "../contracts/events.js";
import type { MetaV1 } from "../contracts/meta.js";
import { ArtifactFile, EventsWriter, logCapsFromEnv, RawLog } from "./artifacts.js";
import { formatTranscriptEntry } from "./transcript.js";

export class RunArtifacts {
  private constructor(
    private readonly events: EventsWriter,
    private readonly stdoutLog: RawLog | undefined,
    private readonly stderrLog: RawLog | undefined,
    private readonly transcript: ArtifactFile | undefined,
  ) {}

  /**
   * Opens the files meta.json names (`folders` makes each folder once, shared with the run's
   * other files); `say` hears of a log cap in the environment that is not understood.
   */
  static async open(
    meta: MetaV1,
    env: NodeJS.ProcessEnv,
    folders: (dir: string) => Promise<void>,
    say: (line: string) => void,
  ): Promise<RunArtifacts> {
    const [events, stdout, stderr, transcript] = await Promise.all([
      ArtifactFile.open("events", meta.eventsPath, folders),
      meta.stdoutPath ? ArtifactFile.open("stdout log", meta.stdoutPath, folders) : undefined,
      meta.stderrPath ? ArtifactFile.open("stderr log", meta.stderrPath, folders) : undefined,
      meta.transcriptPath ? ArtifactFile.open("transcript", meta.transcriptPath, folders) : undefined,
    ]);
    const { caps, error } = logCapsFromEnv(env);
    if (error && (stdout || stderr)) say(error);
    return new RunArtifacts(
      new EventsWriter(events),
      stdout && new RawLog(stdout, caps),
      stderr && new RawLog(stderr, caps),
      transcript,
    );
  }

  /** One record in events.jsonl, and its line in the transcript (when it has one). */
  record(body: EventRecordBody, now: number): void {
    this.events.append(body, now);
    const line = formatTranscriptEntry(body);
    if (line) this.transcript?.write(line);
  }

  /** Bytes of pi's stdout, as they came (a bulky line may be cut by the log's cap). */
  writeStdout(bytes: Buffer, bulky: boolean): void {
    this.stdoutLog?.write(bytes, bulky);
  }

  writeStderr(bytes: Buffer): void {
    this.stderrLog?.write(bytes);
  }

  async close(): Promise<void> {
    await Promise.all([
      this.events.close(),
      this.stdoutLog?.file.close(),
      this.stderrLog?.file.close(),
      this.transcript?.close(),
    ]);
  }

  /** What went wrong with each file so far, one line each. */
  errors(): string[] {
    const files = [this.events.file, this.stdoutLog?.file, this.stderrLog?.file, this.transcript];
    return files.flatMap((file) => (file?.error ? [file.error] : []));
  }
}
