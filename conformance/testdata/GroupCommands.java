// GroupCommands runs Kafka 3.9's consumer-groups tool (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand,
// what kafka-consumer-groups.sh runs) once per line of standard input (arguments separated by tabs) in
// one JVM, so that a script of many commands costs one JVM start. Each command's output (stdout and
// stderr, in order) follows a line "### <n>"; an exit the tool asks for (Exit.exit, e.g. a usage
// error) ends that command with "### exit <code>" instead of the JVM. Run in source-file mode:
// java -cp 'interop/kafka-3.9/target/lib/*' GroupCommands.java < commands
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;

import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.tools.consumer.group.ConsumerGroupCommand;

public class GroupCommands {
    static class ExitCalled extends RuntimeException {
        final int code;
        ExitCalled(int code) { super("exit " + code); this.code = code; }
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        System.setErr(out);
        Exit.setExitProcedure((code, msg) -> { throw new ExitCalled(code); });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            out.println();
            out.println("### " + n++); // the tool's last line may lack its newline
            out.flush();
            try {
                ConsumerGroupCommand.main(line.split("\t"));
            } catch (ExitCalled e) {
                out.println("### exit " + e.code);
            }
            out.flush();
        }
        out.println();
        out.println("### end");
        out.flush();
    }
}
