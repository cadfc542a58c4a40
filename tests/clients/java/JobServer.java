// The Java job server: one JVM running many jobs of Client.java, each on its own thread
// (../README.md, "Job servers"). java -cp classes:lib/* JobServer
// stdin, one JSON request a line: {"id": 7, "job": {...}} or {"id": 7, "cancel": true}.
// stdout, one JSON reply a line: {"id": 7, "result": {...}, "stderr": "..."} (the result that
// `java Client` prints), {"id": 7, "crash": "<stack trace>", "stderr": ...} when the job threw
// an Error (a process of its own would have died), {"id": 7, "cancelled": true, "stderr": ...}.
// The server exits when stdin closes.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

public final class JobServer {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<Long, Running> RUNNING = new ConcurrentHashMap<>();
  private static PrintStream replies;

  private record Running(Thread thread, Capture stderr) {}

  private JobServer() {}

  public static void main(String[] args) throws Exception {
    replies = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    // log4j's garbage-free encoding fills a buffer shared by every thread and lets one thread
    // flush another's log line (into its own job's stderr); without it, each line is written
    // by the thread that logs it.
    System.setProperty("log4j2.enableDirectEncoders", "false");
    // Before any client logs (log4j's console appender keeps the System.err it starts with).
    PrintStream routed = new PrintStream(new JobOutput(System.err), true, StandardCharsets.UTF_8);
    System.setOut(routed);
    System.setErr(routed);
    Client.shareJvm();
    BufferedReader requests =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = requests.readLine(); line != null; line = requests.readLine()) {
      JsonNode request = JSON.readTree(line);
      long id = request.get("id").asLong();
      if (request.path("cancel").asBoolean(false)) {
        cancel(id);
      } else {
        start(id, request.get("job"));
      }
    }
    System.exit(0); // the runner is gone; don't wait for jobs still running
  }

  private static void start(long id, JsonNode job) {
    Capture stderr = new Capture();
    Thread thread =
        new Thread(
            () -> {
              JobOutput.CURRENT.set(stderr); // inherited by the threads the job's clients start
              ObjectNode reply = JSON.createObjectNode().put("id", id);
              try {
                reply.set("result", Client.runJob(job));
              } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                reply.put("crash", trace.toString());
              }
              if (RUNNING.remove(id) != null) { // else cancelled, and answered then
                send(reply, stderr);
              }
            },
            "job-" + id);
    thread.setDaemon(true);
    RUNNING.put(id, new Running(thread, stderr));
    thread.start();
  }

  /** The runner gave up on the job (its timeout): interrupt it and answer at once. */
  private static void cancel(long id) {
    Running running = RUNNING.remove(id);
    if (running != null) {
      running.thread().interrupt();
      send(JSON.createObjectNode().put("id", id).put("cancelled", true), running.stderr());
    }
  }

  private static void send(ObjectNode reply, Capture stderr) {
    reply.put("stderr", stderr.text());
    try {
      String line = JSON.writeValueAsString(reply);
      synchronized (replies) {
        replies.println(line);
      }
    } catch (Exception e) {
      throw new IllegalStateException("cannot write the reply", e);
    }
  }

  /** One job's stderr: the last LIMIT bytes at least (the runner keeps 20 000 characters). */
  private static final class Capture {
    private static final int LIMIT = 64 * 1024;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

    synchronized void write(byte[] data, int offset, int length) {
      bytes.write(data, offset, length);
      if (bytes.size() > 2 * LIMIT) {
        byte[] all = bytes.toByteArray();
        bytes.reset();
        bytes.write(all, all.length - LIMIT, LIMIT);
      }
    }

    synchronized String text() {
      return bytes.toString(StandardCharsets.UTF_8);
    }
  }

  /**
   * System.out and System.err of the server: what a job's thread writes, and the threads it
   * starts (the clients' network and heartbeat threads inherit CURRENT), goes to that job's
   * Capture; the rest to the server's own stderr.
   */
  private static final class JobOutput extends OutputStream {
    static final InheritableThreadLocal<Capture> CURRENT = new InheritableThreadLocal<>();
    private final OutputStream serverStderr;

    JobOutput(OutputStream serverStderr) {
      this.serverStderr = serverStderr;
    }

    @Override
    public void write(int b) throws java.io.IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] data, int offset, int length) throws java.io.IOException {
      Capture capture = CURRENT.get();
      if (capture == null) {
        serverStderr.write(data, offset, length);
      } else {
        capture.write(data, offset, length);
      }
    }

    @Override
    public void flush() throws java.io.IOException {
      serverStderr.flush();
    }
  }
}
