/*
 * PLplot, loaded on the first figure. Only the figure writers (src/lib/plot/) draw, and
 * linking PLplot into the `pfi` binary made every command — `pfi --help` included — load it
 * and, through it, freetype, libltdl, libshp, qhull and PLplot's own csiro and qsastime
 * libraries at start-up. So, as for libcurl (src/lib/control/curl_lazy.h), libxml2
 * (src/lib/telemetry/xml_lazy.h) and NVML, the library is opened with
 * dlopen("libplplot.so.17") when plot_begin starts the first figure; the types and constants
 * still come from <plplot/plplot.h>, and PLplot still loads its cairo driver itself. Include
 * this header instead of <plplot/plplot.h>: the pl* names below then call the loader's
 * forwarding functions.
 */
#ifndef PFI_PLOT_PLPLOT_LAZY_H
#define PFI_PLOT_PLPLOT_LAZY_H

#include <plplot/plplot.h>
#include <stddef.h>

/* The soname of the PLplot whose headers pfi is built against (objdump -p libplplot.so). */
#define PFI_PLPLOT_SONAME "libplplot.so.17"

/* The PLplot functions the figure writers call, as resolved from one opened library: the field
 * for plfoo holds PLplot's c_plfoo (the library's symbol, which plplot.h renames plfoo to; plsexit
 * and plsabort keep their names), with the type of PLplot's own declaration. */
typedef struct plot_lazy_fns {
    void *lib; /* dlopen handle */
    __typeof__(c_pladv) *adv;
    __typeof__(c_plbox) *box;
    __typeof__(c_plcol0) *col0;
    __typeof__(c_plend) *end;
    __typeof__(c_plenv) *env;
    __typeof__(c_plfill) *fill;
    __typeof__(c_plgchr) *gchr;
    __typeof__(c_plgspa) *gspa;
    __typeof__(c_plinit) *init;
    __typeof__(c_pllab) *lab;
    __typeof__(c_pllegend) *legend;
    __typeof__(c_plline) *line;
    __typeof__(c_pllsty) *lsty;
    __typeof__(c_plmtex) *mtex;
    __typeof__(c_plptex) *ptex;
    __typeof__(plsabort) *sabort;
    __typeof__(c_plschr) *schr;
    __typeof__(c_plscmap0n) *scmap0n;
    __typeof__(c_plscol0) *scol0;
    __typeof__(c_plscolbg) *scolbg;
    __typeof__(c_plsdev) *sdev;
    __typeof__(plsexit) *sexit;
    __typeof__(c_plsfnam) *sfnam;
    __typeof__(c_plspage) *spage;
    __typeof__(c_plssub) *ssub;
    __typeof__(c_plstring) *string;
    __typeof__(c_plsyax) *syax;
    __typeof__(c_plvpor) *vpor;
    __typeof__(c_plvsta) *vsta;
    __typeof__(c_plwidth) *width;
    __typeof__(c_plwind) *wind;
} plot_lazy_fns;

/*
 * plot_lazy_open — dlopen soname and resolve every function above into *fns; no global state
 * (the process-wide loader below calls it with PFI_PLPLOT_SONAME; tests pass other names).
 * Returns 0 on success; otherwise -1, *fns zeroed, nothing left open, and why (why_size
 * bytes, may be 0) holds the reason, naming soname: dlerror's text, or which symbol the
 * library lacks.
 */
int plot_lazy_open(const char *soname, plot_lazy_fns *fns, char *why, size_t why_size);

/*
 * plot_lazy_load — open PLplot (PFI_PLPLOT_SONAME) for the process, once (thread-safe,
 * pthread_once; PLplot itself is not: pfi/plot.h). Returns 0 on success; otherwise -1 and a
 * static message in *why (may be NULL). Later calls give the first call's result.
 */
int plot_lazy_load(const char **why);

/* Forwarders, one per function above, with PLplot's prototypes: each loads the library if
 * need be and does nothing when it cannot be loaded, so a figure starts with plot_begin,
 * which calls plot_lazy_load first and reports why. */
void plot_lazy_pladv(PLINT page);
void plot_lazy_plbox(PLCHAR_VECTOR xopt, PLFLT xtick, PLINT nxsub, PLCHAR_VECTOR yopt, PLFLT ytick,
                     PLINT nysub);
void plot_lazy_plcol0(PLINT icol0);
void plot_lazy_plend(void);
void plot_lazy_plenv(PLFLT xmin, PLFLT xmax, PLFLT ymin, PLFLT ymax, PLINT just, PLINT axis);
void plot_lazy_plfill(PLINT n, PLFLT_VECTOR x, PLFLT_VECTOR y);
void plot_lazy_plgchr(PLFLT_NC_SCALAR p_def, PLFLT_NC_SCALAR p_ht);
void plot_lazy_plgspa(PLFLT_NC_SCALAR xmin, PLFLT_NC_SCALAR xmax, PLFLT_NC_SCALAR ymin,
                      PLFLT_NC_SCALAR ymax);
void plot_lazy_plinit(void);
void plot_lazy_pllab(PLCHAR_VECTOR xlabel, PLCHAR_VECTOR ylabel, PLCHAR_VECTOR tlabel);
void plot_lazy_pllegend(PLFLT_NC_SCALAR p_legend_width, PLFLT_NC_SCALAR p_legend_height, PLINT opt,
                        PLINT position, PLFLT x, PLFLT y, PLFLT plot_width, PLINT bg_color,
                        PLINT bb_color, PLINT bb_style, PLINT nrow, PLINT ncolumn, PLINT nlegend,
                        PLINT_VECTOR opt_array, PLFLT text_offset, PLFLT text_scale,
                        PLFLT text_spacing, PLFLT text_justification, PLINT_VECTOR text_colors,
                        PLCHAR_MATRIX text, PLINT_VECTOR box_colors, PLINT_VECTOR box_patterns,
                        PLFLT_VECTOR box_scales, PLFLT_VECTOR box_line_widths,
                        PLINT_VECTOR line_colors, PLINT_VECTOR line_styles,
                        PLFLT_VECTOR line_widths, PLINT_VECTOR symbol_colors,
                        PLFLT_VECTOR symbol_scales, PLINT_VECTOR symbol_numbers,
                        PLCHAR_MATRIX symbols);
void plot_lazy_plline(PLINT n, PLFLT_VECTOR x, PLFLT_VECTOR y);
void plot_lazy_pllsty(PLINT lin);
void plot_lazy_plmtex(PLCHAR_VECTOR side, PLFLT disp, PLFLT pos, PLFLT just, PLCHAR_VECTOR text);
void plot_lazy_plptex(PLFLT x, PLFLT y, PLFLT dx, PLFLT dy, PLFLT just, PLCHAR_VECTOR text);
void plot_lazy_plsabort(void (*handler)(PLCHAR_VECTOR));
void plot_lazy_plschr(PLFLT def, PLFLT scale);
void plot_lazy_plscmap0n(PLINT ncol0);
void plot_lazy_plscol0(PLINT icol0, PLINT r, PLINT g, PLINT b);
void plot_lazy_plscolbg(PLINT r, PLINT g, PLINT b);
void plot_lazy_plsdev(PLCHAR_VECTOR devname);
void plot_lazy_plsexit(int (*handler)(PLCHAR_VECTOR));
void plot_lazy_plsfnam(PLCHAR_VECTOR fnam);
void plot_lazy_plspage(PLFLT xp, PLFLT yp, PLINT xleng, PLINT yleng, PLINT xoff, PLINT yoff);
void plot_lazy_plssub(PLINT nx, PLINT ny);
void plot_lazy_plstring(PLINT n, PLFLT_VECTOR x, PLFLT_VECTOR y, PLCHAR_VECTOR string);
void plot_lazy_plsyax(PLINT digmax, PLINT digits);
void plot_lazy_plvpor(PLFLT xmin, PLFLT xmax, PLFLT ymin, PLFLT ymax);
void plot_lazy_plvsta(void);
void plot_lazy_plwidth(PLFLT width);
void plot_lazy_plwind(PLFLT xmin, PLFLT xmax, PLFLT ymin, PLFLT ymax);

/* plplot_lazy.c itself needs PLplot's own names (to check the types above against them). */
#ifndef PFI_PLPLOT_LAZY_IMPL
#undef pladv
#undef plbox
#undef plcol0
#undef plend
#undef plenv
#undef plfill
#undef plgchr
#undef plgspa
#undef plinit
#undef pllab
#undef pllegend
#undef plline
#undef pllsty
#undef plmtex
#undef plptex
#undef plschr
#undef plscmap0n
#undef plscol0
#undef plscolbg
#undef plsdev
#undef plsfnam
#undef plspage
#undef plssub
#undef plstring
#undef plsyax
#undef plvpor
#undef plvsta
#undef plwidth
#undef plwind
#define pladv plot_lazy_pladv
#define plbox plot_lazy_plbox
#define plcol0 plot_lazy_plcol0
#define plend plot_lazy_plend
#define plenv plot_lazy_plenv
#define plfill plot_lazy_plfill
#define plgchr plot_lazy_plgchr
#define plgspa plot_lazy_plgspa
#define plinit plot_lazy_plinit
#define pllab plot_lazy_pllab
#define pllegend plot_lazy_pllegend
#define plline plot_lazy_plline
#define pllsty plot_lazy_pllsty
#define plmtex plot_lazy_plmtex
#define plptex plot_lazy_plptex
#define plsabort plot_lazy_plsabort
#define plschr plot_lazy_plschr
#define plscmap0n plot_lazy_plscmap0n
#define plscol0 plot_lazy_plscol0
#define plscolbg plot_lazy_plscolbg
#define plsdev plot_lazy_plsdev
#define plsexit plot_lazy_plsexit
#define plsfnam plot_lazy_plsfnam
#define plspage plot_lazy_plspage
#define plssub plot_lazy_plssub
#define plstring plot_lazy_plstring
#define plsyax plot_lazy_plsyax
#define plvpor plot_lazy_plvpor
#define plvsta plot_lazy_plvsta
#define plwidth plot_lazy_plwidth
#define plwind plot_lazy_plwind
#endif

#endif
