/*
 * PLplot through dlopen (see plplot_lazy.h). The library is opened when plot_begin starts the
 * first figure; when it cannot be loaded, plot_begin fails with PFI_ERR_UNAVAILABLE and a
 * message naming the library and dlerror's reason, instead of every process failing to start
 * (or paying for PLplot's dependencies) when it is there.
 */
#define _GNU_SOURCE
#define PFI_PLPLOT_LAZY_IMPL
#include "plot/plplot_lazy.h"

#include "core/dl.h"

/* Every function used: the field of plot_lazy_fns, PLplot's symbol, and the forwarder. */
#define PLOT_LAZY_FUNCTIONS(X)                                                                     \
    X(adv, c_pladv, plot_lazy_pladv)                                                               \
    X(box, c_plbox, plot_lazy_plbox)                                                               \
    X(col0, c_plcol0, plot_lazy_plcol0)                                                            \
    X(end, c_plend, plot_lazy_plend)                                                               \
    X(env, c_plenv, plot_lazy_plenv)                                                               \
    X(fill, c_plfill, plot_lazy_plfill)                                                            \
    X(gchr, c_plgchr, plot_lazy_plgchr)                                                            \
    X(gspa, c_plgspa, plot_lazy_plgspa)                                                            \
    X(init, c_plinit, plot_lazy_plinit)                                                            \
    X(lab, c_pllab, plot_lazy_pllab)                                                               \
    X(legend, c_pllegend, plot_lazy_pllegend)                                                      \
    X(line, c_plline, plot_lazy_plline)                                                            \
    X(lsty, c_pllsty, plot_lazy_pllsty)                                                            \
    X(mtex, c_plmtex, plot_lazy_plmtex)                                                            \
    X(ptex, c_plptex, plot_lazy_plptex)                                                            \
    X(sabort, plsabort, plot_lazy_plsabort)                                                        \
    X(schr, c_plschr, plot_lazy_plschr)                                                            \
    X(scmap0n, c_plscmap0n, plot_lazy_plscmap0n)                                                   \
    X(scol0, c_plscol0, plot_lazy_plscol0)                                                         \
    X(scolbg, c_plscolbg, plot_lazy_plscolbg)                                                      \
    X(sdev, c_plsdev, plot_lazy_plsdev)                                                            \
    X(sexit, plsexit, plot_lazy_plsexit)                                                           \
    X(sfnam, c_plsfnam, plot_lazy_plsfnam)                                                         \
    X(spage, c_plspage, plot_lazy_plspage)                                                         \
    X(ssub, c_plssub, plot_lazy_plssub)                                                            \
    X(string, c_plstring, plot_lazy_plstring)                                                      \
    X(syax, c_plsyax, plot_lazy_plsyax)                                                            \
    X(vpor, c_plvpor, plot_lazy_plvpor)                                                            \
    X(vsta, c_plvsta, plot_lazy_plvsta)                                                            \
    X(width, c_plwidth, plot_lazy_plwidth)                                                         \
    X(wind, c_plwind, plot_lazy_plwind)

/*
 * Each forwarder's prototype (plplot_lazy.h) must be PLplot's declaration of the function it
 * forwards to: checked at compile time. _Generic does not evaluate its operand, so these name
 * the real PLplot symbols without making libpfi reference (link against) them.
 */
#define SAME_TYPE(field, sym, forwarder)                                                           \
    _Static_assert(_Generic(&forwarder, __typeof__(&sym) : 1, default : 0),                        \
                   #forwarder " does not match PLplot's " #sym);
PLOT_LAZY_FUNCTIONS(SAME_TYPE)
#undef SAME_TYPE

/* Where each function goes (and a check that each field is a pointer to the symbol's type). */
#define SYMBOL(field, sym, forwarder) DL_SYMBOL(plot_lazy_fns, field, #sym, sym),
static const dl_symbol plot_symbols[] = {PLOT_LAZY_FUNCTIONS(SYMBOL)};
#undef SYMBOL

DL_OPENER(plot_lazy_open, plot_lazy_fns, "not PLplot 5.15?", plot_symbols)

/* The process's library: opened once, never closed (PLplot keeps its drivers open). */
DL_ONCE_LOADER(plot_lazy_load, plot_lazy_open, plot_lazy_fns, fn, PFI_PLPLOT_SONAME)

void plot_lazy_pladv(PLINT page)
{
    if (plot_lazy_load(NULL) == 0)
        fn.adv(page);
}

void plot_lazy_plbox(PLCHAR_VECTOR xopt, PLFLT xtick, PLINT nxsub, PLCHAR_VECTOR yopt, PLFLT ytick,
                     PLINT nysub)
{
    if (plot_lazy_load(NULL) == 0)
        fn.box(xopt, xtick, nxsub, yopt, ytick, nysub);
}

void plot_lazy_plcol0(PLINT icol0)
{
    if (plot_lazy_load(NULL) == 0)
        fn.col0(icol0);
}

void plot_lazy_plend(void)
{
    if (plot_lazy_load(NULL) == 0)
        fn.end();
}

void plot_lazy_plenv(PLFLT xmin, PLFLT xmax, PLFLT ymin, PLFLT ymax, PLINT just, PLINT axis)
{
    if (plot_lazy_load(NULL) == 0)
        fn.env(xmin, xmax, ymin, ymax, just, axis);
}

void plot_lazy_plfill(PLINT n, PLFLT_VECTOR x, PLFLT_VECTOR y)
{
    if (plot_lazy_load(NULL) == 0)
        fn.fill(n, x, y);
}

void plot_lazy_plgchr(PLFLT_NC_SCALAR p_def, PLFLT_NC_SCALAR p_ht)
{
    if (plot_lazy_load(NULL) == 0)
        fn.gchr(p_def, p_ht);
}

void plot_lazy_plgspa(PLFLT_NC_SCALAR xmin, PLFLT_NC_SCALAR xmax, PLFLT_NC_SCALAR ymin,
                      PLFLT_NC_SCALAR ymax)
{
    if (plot_lazy_load(NULL) == 0)
        fn.gspa(xmin, xmax, ymin, ymax);
}

void plot_lazy_plinit(void)
{
    if (plot_lazy_load(NULL) == 0)
        fn.init();
}

void plot_lazy_pllab(PLCHAR_VECTOR xlabel, PLCHAR_VECTOR ylabel, PLCHAR_VECTOR tlabel)
{
    if (plot_lazy_load(NULL) == 0)
        fn.lab(xlabel, ylabel, tlabel);
}

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
                        PLCHAR_MATRIX symbols)
{
    if (plot_lazy_load(NULL) == 0)
        fn.legend(p_legend_width, p_legend_height, opt, position, x, y, plot_width, bg_color,
                  bb_color, bb_style, nrow, ncolumn, nlegend, opt_array, text_offset, text_scale,
                  text_spacing, text_justification, text_colors, text, box_colors, box_patterns,
                  box_scales, box_line_widths, line_colors, line_styles, line_widths, symbol_colors,
                  symbol_scales, symbol_numbers, symbols);
}

void plot_lazy_plline(PLINT n, PLFLT_VECTOR x, PLFLT_VECTOR y)
{
    if (plot_lazy_load(NULL) == 0)
        fn.line(n, x, y);
}

void plot_lazy_pllsty(PLINT lin)
{
    if (plot_lazy_load(NULL) == 0)
        fn.lsty(lin);
}

void plot_lazy_plmtex(PLCHAR_VECTOR side, PLFLT disp, PLFLT pos, PLFLT just, PLCHAR_VECTOR text)
{
    if (plot_lazy_load(NULL) == 0)
        fn.mtex(side, disp, pos, just, text);
}

void plot_lazy_plptex(PLFLT x, PLFLT y, PLFLT dx, PLFLT dy, PLFLT just, PLCHAR_VECTOR text)
{
    if (plot_lazy_load(NULL) == 0)
        fn.ptex(x, y, dx, dy, just, text);
}

void plot_lazy_plsabort(void (*handler)(PLCHAR_VECTOR))
{
    if (plot_lazy_load(NULL) == 0)
        fn.sabort(handler);
}

void plot_lazy_plschr(PLFLT def, PLFLT scale)
{
    if (plot_lazy_load(NULL) == 0)
        fn.schr(def, scale);
}

void plot_lazy_plscmap0n(PLINT ncol0)
{
    if (plot_lazy_load(NULL) == 0)
        fn.scmap0n(ncol0);
}

void plot_lazy_plscol0(PLINT icol0, PLINT r, PLINT g, PLINT b)
{
    if (plot_lazy_load(NULL) == 0)
        fn.scol0(icol0, r, g, b);
}

void plot_lazy_plscolbg(PLINT r, PLINT g, PLINT b)
{
    if (plot_lazy_load(NULL) == 0)
        fn.scolbg(r, g, b);
}

void plot_lazy_plsdev(PLCHAR_VECTOR devname)
{
    if (plot_lazy_load(NULL) == 0)
        fn.sdev(devname);
}

void plot_lazy_plsexit(int (*handler)(PLCHAR_VECTOR))
{
    if (plot_lazy_load(NULL) == 0)
        fn.sexit(handler);
}

void plot_lazy_plsfnam(PLCHAR_VECTOR fnam)
{
    if (plot_lazy_load(NULL) == 0)
        fn.sfnam(fnam);
}

void plot_lazy_plspage(PLFLT xp, PLFLT yp, PLINT xleng, PLINT yleng, PLINT xoff, PLINT yoff)
{
    if (plot_lazy_load(NULL) == 0)
        fn.spage(xp, yp, xleng, yleng, xoff, yoff);
}

void plot_lazy_plssub(PLINT nx, PLINT ny)
{
    if (plot_lazy_load(NULL) == 0)
        fn.ssub(nx, ny);
}

void plot_lazy_plstring(PLINT n, PLFLT_VECTOR x, PLFLT_VECTOR y, PLCHAR_VECTOR string)
{
    if (plot_lazy_load(NULL) == 0)
        fn.string(n, x, y, string);
}

void plot_lazy_plvpor(PLFLT xmin, PLFLT xmax, PLFLT ymin, PLFLT ymax)
{
    if (plot_lazy_load(NULL) == 0)
        fn.vpor(xmin, xmax, ymin, ymax);
}

void plot_lazy_plvsta(void)
{
    if (plot_lazy_load(NULL) == 0)
        fn.vsta();
}

void plot_lazy_plwidth(PLFLT width)
{
    if (plot_lazy_load(NULL) == 0)
        fn.width(width);
}

void plot_lazy_plsyax(PLINT digmax, PLINT digits)
{
    if (plot_lazy_load(NULL) == 0)
        fn.syax(digmax, digits);
}

void plot_lazy_plwind(PLFLT xmin, PLFLT xmax, PLFLT ymin, PLFLT ymax)
{
    if (plot_lazy_load(NULL) == 0)
        fn.wind(xmin, xmax, ymin, ymax);
}
