set terminal pngcairo size 1200,800 font ",9"
set output "bench/reports/plots/ddl-torch-accuracy.png"
set multiplot layout 2,2
set grid
set key bottom right
set yrange [0.1:0.8]
set ylabel "rank 1 test accuracy (2 000 images)"
set title "4 Mbit/s bottleneck toward rank 1"
set xlabel "training time, s (evaluations left out)"
set arrow 1 from graph 0, first 0.6 to graph 1, first 0.6 nohead dt 2
plot "bench/reports/plots/ddl-torch-accuracy.dat" index 0 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "DDP + gloo (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 1 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay R = 0 (gradient) (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 2 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay history (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 3 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay adaptive (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 4 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay capacity (n=5)"
set title "4 Mbit/s bottleneck toward rank 1"
set xlabel "stage"
set arrow 1 from graph 0, first 0.6 to graph 1, first 0.6 nohead dt 2
plot "bench/reports/plots/ddl-torch-accuracy.dat" index 0 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "DDP + gloo (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 1 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay R = 0 (gradient) (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 2 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay history (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 3 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay adaptive (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 4 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay capacity (n=5)"
set title "no bottleneck (200 Mbit/s)"
set xlabel "training time, s (evaluations left out)"
set arrow 1 from graph 0, first 0.6 to graph 1, first 0.6 nohead dt 2
plot "bench/reports/plots/ddl-torch-accuracy.dat" index 5 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "DDP + gloo (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 6 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay R = 0 (gradient) (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 7 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay history (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 8 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay adaptive (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 9 using 2:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay capacity (n=5)"
set title "no bottleneck (200 Mbit/s)"
set xlabel "stage"
set arrow 1 from graph 0, first 0.6 to graph 1, first 0.6 nohead dt 2
plot "bench/reports/plots/ddl-torch-accuracy.dat" index 5 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "DDP + gloo (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 6 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay R = 0 (gradient) (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 7 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay history (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 8 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay adaptive (n=5)", \
     "bench/reports/plots/ddl-torch-accuracy.dat" index 9 using 1:3:4:5 with yerrorlines lw 1.5 ps 0.5 title "relay capacity (n=5)"
unset multiplot
