#include "cli.h"
int cmd_allocate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("allocate: not yet");
    return PFI_EXIT_INTERNAL;
}
