/* mpisim-net: thin executable around nm_net_main (the `mpisim net` subcommand). */
#include "net_tool.h"

int main(int argc, char **argv) { return nm_net_main(argc, argv, stdout, stderr); }
