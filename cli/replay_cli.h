/* The `mpisim replay` and `mpisim sweep` subcommands (cli/mpisim_main.c dispatches to these).
 * argv[0] is the first argument after the subcommand name. Return the process exit status. */
#ifndef MS_REPLAY_CLI_H
#define MS_REPLAY_CLI_H

#ifdef __cplusplus
extern "C" {
#endif

int mpisim_replay_main(int argc, char **argv);
int mpisim_sweep_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
