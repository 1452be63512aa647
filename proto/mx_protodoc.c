/*  msgx-protodoc - print docs/commands.md from the command lists.  */
#include "mx_cmd.h"

int
main (void)
{
    mx_cmd_print_reference (stdout);
    return 0;
}
