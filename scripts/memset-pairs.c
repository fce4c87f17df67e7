/* memset of a library (dlopen) against the C library's, pinned by the
 * caller (taskset), in 41 alternating pairs of blocks timed by the thread's
 * CPU clock, over one buffer (warm) or a 64 MiB rotation (cold). Prints the
 * best GB/s of each and the median and quartiles of the per-pair ratios.
 *   cc -O2 -o /tmp/memset-pairs scripts/memset-pairs.c -ldl
 *   taskset -c 1 /tmp/memset-pairs target/release/libkdelta_mem.so SIZE COLD(0|1) 0
 * (last argument 1: `rep stosb` in place of the library, 2: in place of the
 * C library). Sizes of 64 MiB and more make one call per block: too few. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
typedef void *(*set_fn)(void *, int, size_t);
static void *repstosb(void *d, int c, size_t n){ void *r=d; __asm__ volatile("rep stosb":"+D"(d),"+c"(n):"a"(c):"memory"); return r;}
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  void*h=dlopen(argv[1],RTLD_NOW|RTLD_LOCAL); set_fn k=(set_fn)dlsym(h,"memset");
  set_fn g=(set_fn)dlsym(RTLD_NEXT,"memset");
  size_t size=strtoul(argv[2],0,0); int cold=atoi(argv[3]); int alt=atoi(argv[4]); if(alt==1)k=repstosb; if(alt==2){g=repstosb;}
  size_t st=(size+63)/64*64; size_t total=cold? (64u<<20): st; size_t slots=total/st; if(!slots)slots=1;
  unsigned char*dst=mmap(0,slots*st,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); memset(dst,2,slots*st);
  double ratios[41]; double best[2]={0,0}; static size_t cur=0;
  for(int r=0;r<41;r++){ double gb[2];
    for(int w=0;w<2;w++){ set_fn f=w?k:g; size_t calls=(size_t)(6e7/size)+1;
      double t0=now(); for(size_t c=0;c<calls;c++){f(dst+cur*st,c&0xff,size); if(++cur==slots)cur=0;} double t=now()-t0;
      gb[w]=calls*(double)size/t/1e9; }
    ratios[r]=gb[1]/gb[0]; if(gb[0]>best[0])best[0]=gb[0]; if(gb[1]>best[1])best[1]=gb[1]; }
  for(int i=0;i<41;i++)for(int j=i+1;j<41;j++)if(ratios[j]<ratios[i]){double x=ratios[i];ratios[i]=ratios[j];ratios[j]=x;}
  printf("memset %zu %s alt%d: base %.2f other %.2f GB/s; median ratio %.3f [%.3f..%.3f]\n",size,cold?"cold":"warm",alt,best[0],best[1],ratios[20],ratios[10],ratios[30]);
}
