/*
 * The usage-text word-wrapper (usage_wrap.h), compiled into pfi and pfid.
 */
#include "usage_wrap.h"

#include <string.h>

void cli_usage_wrap(FILE *f, const char *lead, int indent, int width, const char *text)
{
    fputs(lead, f);
    int col = (int)strlen(lead);
    const char *p = text;
    while (*p != '\0') {
        size_t spaces = strspn(p, " ");
        const char *word = p + spaces;
        size_t n = strcspn(word, " |");
        n += word[n] == '|';
        if (n == 0)
            break; /* only spaces left */
        if (col > indent && col + (int)(spaces + n) > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            spaces = 0;
        }
        fprintf(f, "%*s%.*s", (int)spaces, "", (int)n, word);
        col += (int)(spaces + n);
        p = word + n;
    }
    fputc('\n', f);
}
