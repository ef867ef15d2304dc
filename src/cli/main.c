/*
 * main.c - entry point of `pandastack`, the command-line client; all the
 * work is in cli_main (cli.c).  Usage and exit codes: docs/cli.md.
 */
#include "cli/cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
