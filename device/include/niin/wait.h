/* niin/wait.h -- placeholder: filled by the work on issue 12. */
#ifndef NIIN_WAIT_H
#define NIIN_WAIT_H
#endif
