/* niin/signal.h -- placeholder: filled by the work on issue 12. */
#ifndef NIIN_SIGNAL_H
#define NIIN_SIGNAL_H
#endif
