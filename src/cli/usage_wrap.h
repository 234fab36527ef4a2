/*
 * The one word-wrapper of usage texts, shared by the two programs (pfi's verbs through
 * cli.h, and pfid's --help): both list the library's registries, whose names come from its
 * tables, so their lines are wrapped at run time.
 */
#ifndef PFI_CLI_USAGE_WRAP_H
#define PFI_CLI_USAGE_WRAP_H

#include <stdio.h>

/*
 * cli_usage_wrap — print lead (an option's column, printed as is) then text wrapped greedily
 * so that no line passes width columns where it can break: at a space (dropped at the break)
 * or after a '|'; continuation lines are indented by indent spaces. Ends with a newline.
 */
void cli_usage_wrap(FILE *f, const char *lead, int indent, int width, const char *text);

#endif
